#!/usr/bin/env bash
# Build vs buy for the HTTP remote (ARCHITECTURE.md, "HTTP client: build vs buy"): compare.cpp built
# on cubby's own client and on cpp-httplib (Debian's libcpp-httplib-dev, installed here), both
# asked for the same 256 KiB value from a real nginx (ci/lib.sh's start_nginx) over http:// and
# https://. Prints, per client and scheme: a fresh process's CPU time (user + system, from wait4)
# to make one lookup and its wall time, medians of RUNS processes (cpu_ms, wall_ms), the shared
# libraries it loads (libs), and a warm lookup's median and p90 latency over LOOKUPS lookups on one
# kept connection (warm_us, p90_us) with the process's CPU per lookup (warm_cpu, us).
#   bench/http_client/compare.sh [BUILD_DIR]   # BUILD_DIR: a configured build with cubby_core
#   RUNS=200 LOOKUPS=2000                       # defaults
set -euo pipefail
# shellcheck source=ci/lib.sh  # start_nginx sets nginx_url, nginx_https_url, nginx_ca, nginx_why
source "$(dirname "${BASH_SOURCE[0]}")/../../ci/lib.sh"

build="${1:-$CUBBY_ROOT/build/ci}"
runs="${RUNS:-200}" lookups="${LOOKUPS:-2000}"
[ -f "$build/CMakeCache.txt" ] || die "no configured build in $build (cmake -S . -B $build first)"
apt_install libcpp-httplib-dev pkg-config
cmake --build "$build" --target cubby_core >/dev/null
work="$(mktemp -d /tmp/cubby-http-compare.XXXXXX)"
trap 'stop_nginx "$work" 2>/dev/null || true; rm -rf "$work"' EXIT

cuda_include="$(sed -n 's/^CUDAToolkit_INCLUDE_DIR:[A-Z]*=//p' "$build/CMakeCache.txt" | awk 'NR == 1')"
source="$CUBBY_ROOT/bench/http_client/compare.cpp"
# shellcheck disable=SC2046  # pkg-config's flags are words
g++ -std=c++20 -O2 -DCOMPARE_CUBBY -I"$CUBBY_ROOT/core/src" -I"$CUBBY_ROOT/core/include" \
  -I"$build/core/include" ${cuda_include:+-I"$cuda_include"} "$source" -o "$work/own" \
  "$build/core/libcubby_core.a" -lhiredis -llz4 -lssl -lcrypto -ldl -pthread
# shellcheck disable=SC2046
g++ -std=c++20 -O2 -DCOMPARE_HTTPLIB "$source" -o "$work/httplib" \
  $(pkg-config --cflags --libs cpp-httplib) -lssl -lcrypto -pthread

mkdir -p "$work/nginx"
start_nginx "$work/nginx" || die "$nginx_why"
key=0123456789abcdef0123456789abcdef
"$work/own" put "$nginx_url/cubby" "$key" 262144 || die "the PUT to nginx failed"

printf '%-8s %-6s %5s %8s %8s %9s %8s %9s\n' client scheme libs cpu_ms wall_ms warm_us p90_us warm_cpu
for client in own httplib; do
  for scheme in http https; do
    url="$nginx_url/cubby" ca=""
    [ "$scheme" = https ] && url="$nginx_https_url/cubby" ca="$nginx_ca"
    fresh="$(/usr/bin/python3 - "$work/$client" "$url" "$key" "$ca" "$runs" <<'PY'
import os, statistics, sys, time
exe, url, key, ca, runs = sys.argv[1:6]
cpu, wall = [], []
for _ in range(int(runs)):
    start = time.perf_counter()
    pid = os.spawnv(os.P_NOWAIT, exe, [exe, "once", url, key] + ([ca] if ca else []))
    _, status, usage = os.wait4(pid, 0)
    wall.append(time.perf_counter() - start)
    if status != 0:
        sys.exit(f"{exe} once {url}: exit status {status}")
    cpu.append(usage.ru_utime + usage.ru_stime)
print(f"{statistics.median(cpu) * 1e3:.2f} {statistics.median(wall) * 1e3:.2f}")
PY
)"
    warm="$("$work/$client" warm "$url" "$key" "$lookups" ${ca:+"$ca"})"
    libs="$(ldd "$work/$client" | grep -c '=>')"
    read -r cpu wall <<<"$fresh"
    read -r _ median _ p90 _ cpu_warm <<<"$warm"
    printf '%-8s %-6s %5s %8s %8s %9s %8s %9s\n' "$client" "$scheme" "$libs" "$cpu" "$wall" \
      "$median" "$p90" "$cpu_warm"
  done
done
