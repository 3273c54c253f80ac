#!/usr/bin/env bash
# The `install` preset of CMakePresets.json (README, "Install"; docs/reference.md, "Install and use") configures a Release build
# of what `cmake --install` installs: the library, the tool and the harness, without cubby's tests
# and benchmarks.
#   tests/install/preset.sh SOURCE_DIR
source "$(dirname "$0")/lib.sh"
source_dir="$1"
step cmake -S "$source_dir" --preset install -B "$work/build"
for setting in CMAKE_BUILD_TYPE:STRING=Release CUBBY_BUILD_TESTS:BOOL=OFF CUBBY_BUILD_BENCH:BOOL=OFF \
               CUBBY_BUILD_CLI:BOOL=ON CUBBY_BUILD_GTEST:BOOL=ON; do
  grep -qx "$setting" "$work/build/CMakeCache.txt" || fail "the install preset does not set $setting"
done
echo "the install preset configures OK"
