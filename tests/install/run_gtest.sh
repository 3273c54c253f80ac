#!/usr/bin/env bash
# Builds tests/install/gtest_consumer against the installed PREFIX with
# find_package(cubby COMPONENTS gtest), and runs its tests through ctest: the warm-up fixture
# compiles once, every other test (PRE_TEST and POST_BUILD discovery, --cubby_require_warm) hits.
#   tests/install/run_gtest.sh PREFIX LIBDIR
source "$(dirname "$0")/lib.sh"
prefix="$1"
libdir="$2"
here="$(cd "$(dirname "$0")" && pwd)"

[ -f "$prefix/$libdir/cmake/cubby/cubbyGTestTargets.cmake" ] \
  || fail "$prefix has no GoogleTest harness (configure cubby with CUBBY_BUILD_GTEST=ON)"
step cmake -S "$here/gtest_consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
step cmake --build "$work/build" -j2

# 2 tests x 2 targets, plus the warm-up fixture and a cubby_warm fixture per target (the installed
# cubby tool was found); the launch tests are labelled gpu.
step ctest --test-dir "$work/build" -N
grep -q 'Total Tests: 7$' "$work/log" || fail "expected 7 registered tests"
grep -q 'consumer_tests.cubby_warm$' "$work/log" || fail "no cubby_warm fixture: the tool was not found"
step ctest --test-dir "$work/build" -N -L gpu   # lists the warm-up fixture they require too
if [ "$(grep -c 'Test *#[0-9]*: FillGpu\.WritesSeven$' "$work/log")" != 2 ] || grep -q 'Fill\.' "$work/log"; then
  fail "expected the 2 FillGpu tests, and only those, labelled gpu"
fi

# Cold: the warm-up compiles the program once.
step ctest --test-dir "$work/build" -R 'cubby_warm_up' -V
grep -q '\[cubby\] hits: 0 (memory 0, disk 0, remote 0), misses: [0-9]*, compiles: 1 (' "$work/log" \
  || fail "the warm-up did not compile exactly one program"
# Everything, in parallel: the warm-up again, then the tests; consumer_tests_post fails on any compile.
step ctest --test-dir "$work/build" -j2 --output-on-failure
grep -q '100% tests passed, 0 tests failed out of 7' "$work/log" || fail "not every test passed"
# After a header edit or a toolchain upgrade (every key changed, the recorded recipes kept): the
# cubby_warm fixture compiles the program before the tests, so the warm-up finds it.
rm -rf "$CUBBY_DIR/entries"
step ctest --test-dir "$work/build" -R 'cubby_warm' -V
grep -q '\[cubby\] hits: 1 (memory 0, disk 1, remote 0), misses: 0, compiles: 0 (.*; hit lookups: [0-9.]* ms;' "$work/log" \
  || fail "the cubby_warm fixture did not compile the recorded program before the warm-up"
# A direct run is warm.
step "$work/build/consumer_tests" --gtest_filter='Fill.*' --cubby_require_warm
grep -q '\[cubby\] hits: 1 (memory 0, disk 1, remote 0), misses: 0, compiles: 0 (.*; hit lookups: [0-9.]* ms;' "$work/log" \
  || fail "the direct run was not one disk hit"
echo "find_package(cubby COMPONENTS gtest) consumer OK"
