#!/usr/bin/env bash
# A C program on the C API against the installed PREFIX, built two ways: with CMake
# (tests/install/c_consumer, a C-only project, find_package(cubby)) and with the C compiler and
# pkg-config (cubby.pc) alone. Both builds run against a copy of PREFIX moved elsewhere (the
# CMake package and cubby.pc find their prefix relative to themselves), and each compiles, then
# hits, a kernel through the cache.
#   tests/install/run_c.sh PREFIX LIBDIR
source "$(dirname "$0")/lib.sh"
prefix="$1"
libdir="$2"
here="$(cd "$(dirname "$0")" && pwd)"
command -v pkg-config >/dev/null || fail "pkg-config is needed (Debian: pkg-config)"
cp -a "$prefix" "$work/moved"
moved="$work/moved"

# CMake.
step cmake -S "$here/c_consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$moved"
step cmake --build "$work/build"
step ldd "$work/build/c_consumer"
grep -q "libcubby\.so.* => $moved/$libdir/libcubby\.so" "$work/log" \
  || fail "the CMake-built program does not load libcubby from the moved prefix"
compiled_then_hit "CMake" "$work/build/c_consumer"

# pkg-config, with nothing but cubby.pc to say where cubby is.
export PKG_CONFIG_PATH="$moved/$libdir/pkgconfig"
step pkg-config --cflags --libs cubby
flags="$(cat "$work/log")"
[[ "$flags" == *"-I$moved/$libdir/pkgconfig/"* || "$flags" == *"-I$moved/include"* ]] \
  || fail "cubby.pc does not point into the moved prefix: $flags"
[ "$(pkg-config --variable=cxx_std cubby)" = "-std=c++20" ] || fail "cubby.pc has no cxx_std=-std=c++20"
# shellcheck disable=SC2086  # the flags are words
step cc -std=c11 -Wall -Wextra -Wpedantic -Werror -o "$work/c_pkgconfig" "$here/c_consumer/main.c" \
  $flags -Wl,-rpath,"$(pkg-config --variable=libdir cubby)"
compiled_then_hit "pkg-config" "$work/c_pkgconfig"
echo "C API consumer (CMake and pkg-config, moved prefix) OK"
