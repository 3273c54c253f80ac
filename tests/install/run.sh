#!/usr/bin/env bash
# Installs the built tree into a temporary prefix, builds tests/install/consumer against it with
# find_package(cubby), and checks that it compiles (then hits) a kernel through the cache.
#   tests/install/run.sh BUILD_DIR
set -euo pipefail
build_dir="$1"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d /tmp/cubby-install.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$here/consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
export CUBBY_DIR="$work/store"
first="$("$work/build/consumer")"
second="$("$work/build/consumer")"
echo "first:  $first"
echo "second: $second"
[[ "$first" == *" compiled _Z4fillIiEvPT_" ]] || { echo "first run did not compile fill<int>"; exit 1; }
[[ "$second" == *" disk _Z4fillIiEvPT_" ]] || { echo "second run was not a disk hit"; exit 1; }
[ "${first%% *}" = "${second%% *}" ] || { echo "keys differ between runs"; exit 1; }
echo "find_package(cubby) consumer OK"
