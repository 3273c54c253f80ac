#!/usr/bin/env bash
# The README's own examples, as a new user runs them against an installed PREFIX: every fenced
# block tagged `readme-test` is extracted, the C++ one built with c++ and pkg-config, the C one
# with cc and pkg-config, the Python one run on the package sources with the prefix's libcubby
# (tests/python/test_wheel.py runs it again after `pip install` into a fresh venv); each must
# compile fill<int> on a fresh store, then hit the disk. Then the README's GoogleTest example
# (blocks tagged readme-gtest) as a CMake project with ctest, and the README's ccache habits of the
# installed tool. Fails when a tagged block is missing, so a README edit cannot drop one silently.
#   tests/install/readme_snippets.sh PREFIX LIBDIR
source "$(dirname "$0")/lib.sh"
prefix="$1"
libdir="$2"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
readme="$repo/README.md"

# snippet LANG [TAG]: the body of the README's one fenced block opened with "```LANG TAG"
# (TAG: readme-test unless given).
snippet() {
  local open="\`\`\`$1 ${2:-readme-test}"
  awk -v open="$open" '$0 == open { inside = 1; found++; next }
    inside && /^```/ { inside = 0; next } inside { print }
    END { if (found != 1) exit 1 }' "$readme" || fail "README.md needs exactly one $open block"
}

command -v pkg-config >/dev/null || fail "pkg-config is needed (Debian: pkg-config)"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
rpath="-Wl,-rpath,$prefix/$libdir"

snippet cpp >"$work/app.cpp"
# shellcheck disable=SC2046  # the flags are words
step c++ -std=c++20 -Wall -Wextra -Werror -o "$work/app_cpp" "$work/app.cpp" \
  $(pkg-config --cflags --libs cubby) "$rpath"
compiled_then_hit "README C++" "$work/app_cpp"

snippet c >"$work/app.c"
# shellcheck disable=SC2046
step cc -std=c11 -Wall -Wextra -Werror -o "$work/app_c" "$work/app.c" \
  $(pkg-config --cflags --libs cubby) "$rpath"
compiled_then_hit "README C" "$work/app_c"

snippet python >"$work/app.py"
lib="$(ls "$prefix/$libdir"/libcubby.so.* | awk 'NR == 1')"
compiled_then_hit "README Python" env CUBBY_LIBRARY="$lib" PYTHONPATH="$repo/pytest_plugin/src" \
  python3 "$work/app.py"

# The README's GoogleTest example (its cmake and cpp readme-gtest blocks) as a project: the
# warm-up fixture compiles, the other tests hit (the GPU test skips without a GPU).
if [ -f "$prefix/$libdir/cmake/cubby/cubbyGTestTargets.cmake" ]; then
  mkdir -p "$work/gtest"
  snippet cpp readme-gtest >"$work/gtest/test.cpp"
  { printf 'cmake_minimum_required(VERSION 3.24)\nproject(readme_gtest CXX)\nenable_testing()\n'
    printf 'add_executable(my_kernel_tests test.cpp)\n'
    snippet cmake readme-gtest; } >"$work/gtest/CMakeLists.txt"
  rm -rf "$CUBBY_DIR"
  step cmake -S "$work/gtest" -B "$work/gtest/build" -DCMAKE_PREFIX_PATH="$prefix"
  step cmake --build "$work/gtest/build" -j2
  step ctest --test-dir "$work/gtest/build" --output-on-failure
  grep -q '100% tests passed' "$work/log" || fail "the README's GoogleTest example failed"
  step "$work/gtest/build/my_kernel_tests"
  grep -q '\[cubby\] hits: 1 (memory 0, disk 1, remote 0)' "$work/log" || fail "the README's GoogleTest example is not warm"
else
  echo "README GoogleTest example skipped: $prefix has no GoogleTest harness"
fi

# The ccache habits of the README's table, with the installed tool.
cubby="$prefix/bin/cubby"
step "$cubby" -s
grep -q '^hits (disk) *[1-9]' "$work/log" || fail "cubby -s does not show the disk hits"
step "$cubby" -M 1.5G
[ "$("$cubby" config max_size)" = "1.5G" ] || fail "cubby -M 1.5G was not kept in cubby.conf"
step "$cubby" -p
grep -q '^max_size = 1.5G .*cubby.conf' "$work/log" || fail "cubby -p does not list max_size from cubby.conf"
step "$cubby" --json -s
grep -q '"max_size": 1500000000' "$work/log" || fail "1.5G is not 1,500,000,000 bytes"
step "$cubby" -M 0
step "$cubby" -s
grep -q '^max size *unlimited' "$work/log" || fail "cubby -M 0 is not unlimited"
step "$cubby" -z
step "$cubby" --json -s
grep -q '"hits_disk": 0' "$work/log" || fail "cubby -z did not zero the counters"
step "$cubby" --evict-older-than 1d
step "$cubby" -C
step "$cubby" --json -s
grep -q '"entries": 0' "$work/log" || fail "cubby -C did not clear the store"
step "$cubby" -V
grep -q '^cubby ' "$work/log" || fail "cubby -V does not print the version"
if "$cubby" -M lots >"$work/log" 2>&1; then fail "cubby -M lots succeeded"; fi
grep -q '^cubby: .*lots' "$work/log" || fail "a bad size is not one cubby: line"
echo "README snippets (C++, C, Python, GoogleTest) and ccache habits OK"
