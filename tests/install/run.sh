#!/usr/bin/env bash
# Builds tests/install/consumer against the installed PREFIX with find_package(cubby): a project
# that sets no C++ standard (GCC 12's default is C++17) gets C++20 from cubby::cubby's usage
# requirements, then compiles (and on a second run hits) a kernel through the cache.
#   tests/install/run.sh PREFIX
source "$(dirname "$0")/lib.sh"
prefix="$1"
here="$(cd "$(dirname "$0")" && pwd)"
step cmake -S "$here/consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix"
step cmake --build "$work/build"
grep -qE -- '-std=(c|gnu)\+\+20' "$work/build/CMakeFiles/consumer.dir/flags.make" \
  || fail "the consumer was not compiled as C++20: cubby::cubby does not carry cxx_std_20"
compiled_then_hit consumer "$work/build/consumer"
echo "find_package(cubby) consumer with the default C++ standard OK"
