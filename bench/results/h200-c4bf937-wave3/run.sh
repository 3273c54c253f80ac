#!/usr/bin/env bash
# H200 pass over the third-wave merge (session 2 of 2026-12-01): GPU ctest labels, BM_HitVsLoad
# old (9b051d3) vs new alternating, TLS vs plain Redis (bare GET and a user's lookup), the real
# CuPy and cuda.core tests, CuPy's warm rows, the cuda.core hit. Each step time-bounded.
set -u
R="$(pwd)"
OUT="${OUT:-/tmp/out}"; L="$OUT/logs"; mkdir -p "$L"
if [ "$R" != /work/main ]; then mkdir -p /work && ln -sfn "$R" /work/main; fi
cd /work/main || exit 1
s=$(date +%s)
tar -xJf .gpu/f2/b.tar.xz || exit 1
echo "extract $(( $(date +%s) - s ))s" | tee -a "$OUT/status"
export LD_LIBRARY_PATH=/work/main/.carry/lib
export CUBBY_TEST_REDIS_SERVER=/work/main/.carry/redis/redis-server
mod="$(cmake --system-information 2>/dev/null | sed -n 's/^CMAKE_ROOT "\(.*\)"$/\1/p' | head -n 1)"
[ -n "$mod" ] && [ ! -f "$mod/Modules/GoogleTestAddTests.cmake" ] && cp .carry/GoogleTestAddTests.cmake "$mod/Modules/"
mkdir -p /usr/share/cmake-3.25/Modules && cp .carry/GoogleTestAddTests.cmake /usr/share/cmake-3.25/Modules/ 2>/dev/null
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; } >"$L/gpu.txt" 2>&1
step() { local name="$1" limit="$2"; shift 2; local t=$(date +%s); timeout "$limit" "$@" >"$L/$name.log" 2>&1; echo "$name=$? $(( $(date +%s) - t ))s" | tee -a "$OUT/status"; }
export CUBBY_DIR="$(mktemp -d)"
step ctest 170 ctest --test-dir build/gpu -L 'gpu|harness|examples' -j 12 --output-on-failure
tail -n 8 "$L/ctest.log"
# BM_HitVsLoad, old tree vs new, alternating (issue 24: no regression beyond noise).
for r in 1 2; do
  for v in old new; do
    b=build/gpu/bench/cubby_bench; [ $v = old ] && b=build/gpu-old/bench/cubby_bench
    CUBBY_BENCH_DIR=/tmp/hvl-$v step hvl-$v-$r 60 $b --benchmark_filter='BM_HitVsLoad/(tiny|mdspan50)' \
      --benchmark_repetitions=3 --benchmark_out="$OUT/hvl-$v-$r.json" --benchmark_out_format=json
  done
done
# TLS vs plain Redis: the bare GET and a user's lookup.
RS=/work/main/.carry/redis/redis-server; T=/work/main/.gpu/f2/tls
mkdir -p /tmp/rp /tmp/rt
$RS --port 26379 --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --dir /tmp/rp --logfile /tmp/rp/log >/dev/null 2>&1
$RS --port 0 --tls-port 26380 --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --dir /tmp/rt --logfile /tmp/rt/log \
  --tls-cert-file $T/server.crt --tls-key-file $T/server.key --tls-ca-cert-file $T/ca.crt --tls-auth-clients no >/dev/null 2>&1
sleep 1
export CUBBY_REMOTE_CA_FILE=$T/ca.crt CUBBY_BENCH_BACKENDS="redis=redis://127.0.0.1:26379,rediss=rediss://127.0.0.1:26380"
step tls_get 80 build/gpu/bench/cubby_bench --benchmark_filter='BM_RemoteGet/(mdspan50|tiny)/(raw|lz4)/(redis|rediss)/' \
  --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_min_time=0.2 \
  --benchmark_out="$OUT/tls_get.json" --benchmark_out_format=json
step tls_lookup 120 build/gpu/bench/cubby_remote_lookup_bench --benchmark_filter='BM_RemoteLookup/(tiny|mdspan50)/(redis|rediss)/|BM_Tls' \
  --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true \
  --benchmark_out="$OUT/tls_lookup.json" --benchmark_out_format=json
grep -E "_median" "$L/tls_get.log" "$L/tls_lookup.log" | cut -c1-140
unset CUBBY_REMOTE_CA_FILE CUBBY_BENCH_BACKENDS
unset LD_LIBRARY_PATH
export CUBBY_LIBRARY=/work/main/build/gpu/core/libcubby.so CUBBY_CLI=/work/main/build/gpu/cli/cubby PYTHONPATH=/work/main/pytest_plugin/src
export LD_LIBRARY_PATH=/work/main/.carry/lib
unset CUBBY_DIR
NV="$(timeout 60 python3 -c "
from cupy.cuda import compiler; compiler._get_nvrtc_version()
print([l.split()[-1] for l in open('/proc/self/maps') if 'libnvrtc.so' in l][0])" 2>>"$L/env.txt")"
[ -n "$NV" ] && export CUBBY_NVRTC_LIBRARY="$NV"
echo "CUBBY_NVRTC_LIBRARY=$NV" >>"$L/env.txt"
step pytest_gpu 130 python3 -m pytest tests/python/gpu/test_cupy_through_cubby.py -v -rs -p no:cacheprovider
tail -n 8 "$L/pytest_gpu.log"
step cupy_warm 170 python3 bench/suite/cupy_suite.py --out "$OUT/cupy_warm.json" --work /tmp/cw --parts warm --warm-repeat 7 --deadline 150
python3 - "$OUT/cupy_warm.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps(d.get("suites")), json.dumps(d.get("goals")))
for r in d["runs"]: print(r["row"], r["run"], r["seconds"], r["exit"])
PY
for i in 1 2 3; do timeout 30 python3 bench/suite/cuda_core_hit.py --out "$OUT/cuda_core_hit$i.json" >>"$L/cuda_core_hit.log" 2>&1; done
cat "$OUT"/cuda_core_hit*.json 2>/dev/null | tr -d '\n ' | cut -c1-400; echo
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
(cd "$OUT" && tar -czf results.tgz *.json && rm -f *.json)
