#!/usr/bin/env bash
# Collects what a GPU machine without a network (and without GoogleTest, Google Benchmark or
# Redis) needs to run a tree built here, into one folder to copy there beside the build folder:
#   ci/gpu/carry.sh [DIR]        DIR default .carry (ignored by git: list it in .git/info/exclude)
# DIR/lib: the shared libraries the build links and Debian 12 has but the GPU machine may lack
#   (Google Benchmark, hiredis, OpenSSL, LZ4, and their own dependencies): put DIR/lib on
#   LD_LIBRARY_PATH there.
# DIR/redis/redis-server: a redis-server (Debian's binary and its libraries, behind a wrapper that
#   sets its own library path, so nothing else sees them; it also uses DIR/lib): CUBBY_TEST_REDIS_SERVER=DIR/redis/redis-server
#   lets the remote-tier tests, ci/suite-timing.sh's fleet simulation and ci/gpu/bench.sh start it.
# DIR/GoogleTestAddTests.cmake: CMake's script behind gtest_discover_tests, which ctest runs at
#   test time (the GPU machine's CMake may lack it): copy it into the CMake modules folder there.
# Each missing piece is reported and skipped; the exit status is 1 if any was missing.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${1:-$root/.carry}"
mkdir -p "$dir/lib" "$dir/redis"
status=0
missing() { echo "ci/gpu/carry.sh: $1 not found; $2" >&2; status=1; }

# The library a binary of the build resolves NAME to (ldd), else the first match on the system.
library_path() {
  local name="$1" found
  found="$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n { print $NF; exit }')"
  [ -n "$found" ] && readlink -f "$found"
}
# The C runtime's own libraries, which the GPU machine has (and must use its own of).
is_base_library() {
  case "$1" in
    libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*) return 0 ;;
  esac
  return 1
}
# Each library the build links, with its own dependencies: the GPU image may lack them.
for name in libbenchmark.so.1debian libhiredis.so.0.14 libcrypto.so.3 libssl.so.3 liblz4.so.1; do
  if path="$(library_path "$name")" && [ -n "$path" ]; then
    cp -L "$path" "$dir/lib/$name"
    ldd "$path" | awk '/=> \// { print $1, $3 }' | while read -r dep dep_path; do
      is_base_library "$dep" || [ -f "$dir/lib/$dep" ] || cp -L "$dep_path" "$dir/lib/$dep"
    done
  else
    missing "$name" "install the build's packages first (ci/lib.sh: CUBBY_APT_PACKAGES)"
  fi
done

server="$(command -v redis-server || true)"
if [ -n "$server" ]; then
  # Debian's redis-server is a link to redis-check-rdb, which picks its mode from argv[0]: the
  # binary is copied under a name that means "server".
  cp -L "$server" "$dir/redis/redis-server.bin"
  ldd "$server" | awk '/=> \// { print $3 }' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*) ;;  # the GPU machine's own
      *) [ -f "$dir/lib/$(basename "$lib")" ] || cp -L "$lib" "$dir/redis/" ;;  # once in all
    esac
  done
  cat >"$dir/redis/redis-server" <<'WRAPPER'
#!/bin/sh
# redis-server with the libraries copied beside it (ci/gpu/carry.sh); nothing else sees them.
here="$(dirname "$(readlink -f "$0")")"
LD_LIBRARY_PATH="$here:$here/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/redis-server.bin" "$@"
WRAPPER
  chmod +x "$dir/redis/redis-server"
  "$dir/redis/redis-server" --version >/dev/null || missing "a working copy of redis-server" "see above"
else
  missing redis-server "apt-get install redis-server"
fi

module="$(cmake --system-information 2>/dev/null | sed -n 's/^CMAKE_ROOT "\(.*\)"$/\1/p' | awk 'NR == 1')"
if [ -n "$module" ] && [ -f "$module/Modules/GoogleTestAddTests.cmake" ]; then
  cp "$module/Modules/GoogleTestAddTests.cmake" "$dir/"
else
  missing GoogleTestAddTests.cmake "is CMake installed?"
fi
du -sh "$dir" | sed 's/^/ci\/gpu\/carry.sh: /'
exit $status
