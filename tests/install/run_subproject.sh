#!/usr/bin/env bash
# Builds tests/install/subproject, a downstream project that adds cubby's SOURCE_DIR with
# FetchContent, then reconfigures the same build with add_subdirectory (cubby's options re-read
# their defaults; its objects are reused, so cubby is compiled once). Each time: only the library
# and the harness are built, ctest lists only the consumer's tests, and they pass.
#   tests/install/run_subproject.sh SOURCE_DIR
source "$(dirname "$0")/lib.sh"
source_dir="$1"
here="$(cd "$(dirname "$0")" && pwd)"
build="$work/build"
# The tests the consumer registers, and only those (consumer.consumer_tests.cubby_warm too when a
# `cubby` tool is on PATH: cubby_add_gtest then uses it).
expected='consumer.Fill.CompilesEveryInstantiation
consumer.FillGpu.WritesSeven
consumer.c_api
consumer.cache
consumer.consumer_tests.cubby_warm_up'

for via in FetchContent add_subdirectory; do
  # No build type: no optimisation, no debug information (the quickest build of cubby; the
  # consumers' run time is NVRTC's).
  step cmake -S "$here/subproject" -B "$build" -U 'CUBBY_BUILD_*' -DCUBBY_VIA="$via" \
    -DCUBBY_SOURCE_DIR="$source_dir" -DCMAKE_BUILD_TYPE=
  step cmake --build "$build" -j2
  echo "$via: built $(grep -c 'Building CXX object _deps/cubby-build/' "$work/log" || true) of cubby's sources"
  for internal in cli tests bench fuzz; do
    [ ! -e "$build/_deps/cubby-build/$internal" ] || fail "$via: cubby's $internal/ was configured"
  done
  step ctest --test-dir "$build" -N
  listed="$(sed -nE 's/^ *Test *#[0-9]+: (.*)$/\1/p' "$work/log" | grep -v '^consumer\.consumer_tests\.cubby_warm$' | sort)"
  [ "$listed" = "$expected" ] || fail "$via: ctest lists other tests than the consumer's:
$listed"
  rm -rf "$CUBBY_DIR"
  step ctest --test-dir "$build" -j2 --output-on-failure
  echo "$via: $(grep 'tests passed' "$work/log")"
done
echo "FetchContent and add_subdirectory consumers OK"
