#!/usr/bin/env bash
# H200 call B (session of 2026-12-02): GPU ctest labels, CuPy's warm rows (-n 8 and alone,
# alternating own / cubby), the real CuPy and cuda.core tests, the cuda.core hit, TLS vs plain Redis
# (the bare GET). Each step time-bounded. Results: results.tgz, logs.tgz, status.
set -u
R="$(pwd)"; OUT="${OUT:-/tmp/out}"; W="$OUT/r"; L="$W/logs"; mkdir -p "$L"
if [ "$R" != /work/main ]; then mkdir -p /work && ln -sfn "$R" /work/main; fi
cd /work/main || exit 1
tar -xJf .gpu/pB/b.tar.xz || exit 1
export LD_LIBRARY_PATH=/work/main/.carry/lib
# Each step's outcome goes to status; results.tgz is remade after every step, so a call cut short
# still brings back what was done.
step() { local name="$1" limit="$2"; shift 2; local t=$(date +%s); timeout "$limit" "$@" >"$L/$name.log" 2>&1; echo "$name=$? $(( $(date +%s) - t ))s" | tee -a "$OUT/status"; tar -C "$OUT" -czf "$OUT/results.tgz" r; }
trap 'tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$W"' EXIT
# An installed plugin (pip) has its bytecode compiled; this machine runs Python with
# PYTHONDONTWRITEBYTECODE=1, so without this every pytest process would compile cubby's modules.
python3 -m compileall -q pytest_plugin/src bench/tools >/dev/null 2>&1
{ env | grep -i python; nproc; } >"$W/env.txt" 2>&1
# 1. CuPy: the real tests, the warm rows, the cuda.core hit
export CUBBY_LIBRARY=/work/main/build/gpu/core/libcubby.so CUBBY_CLI=/work/main/build/gpu/cli/cubby PYTHONPATH=/work/main/pytest_plugin/src
NV="$(timeout 60 python3 -c "
from cupy.cuda import compiler; compiler._get_nvrtc_version()
print([l.split()[-1] for l in open('/proc/self/maps') if 'libnvrtc.so' in l][0])" 2>>"$W/env.txt")"
[ -n "$NV" ] && export CUBBY_NVRTC_LIBRARY="$NV"
step pytest_gpu 60 python3 -m pytest tests/python/gpu/test_cupy_through_cubby.py -v -rs -p no:cacheprovider
tail -n 6 "$L/pytest_gpu.log"
step warm_x8 200 python3 bench/tools/cupy_warm_profile.py --suite tests/python/gpu/test_cupy_mdspan.py --work /tmp/cwx --out "$W/warm_x8.json" --rounds ${X8_ROUNDS:-8} --configs own,cubby --xdist 8 --no-profile
tail -n 12 "$L/warm_x8.log"
step warm_alone 60 python3 bench/tools/cupy_warm_profile.py --suite tests/python/gpu/test_cupy_mdspan.py --work /tmp/cwx --out "$W/warm_alone.json" --rounds 6 --configs own,cubby --no-profile
tail -n 12 "$L/warm_alone.log"
for i in 1 2 3; do timeout 20 python3 bench/suite/cuda_core_hit.py --out "$W/cuda_core_hit$i.json" >>"$L/cuda_core_hit.log" 2>&1; done
cat "$W"/cuda_core_hit*.json 2>/dev/null | tr -d '\n ' | cut -c1-400; echo
unset CUBBY_LIBRARY CUBBY_CLI PYTHONPATH CUBBY_NVRTC_LIBRARY
# 2. GPU ctest labels
mod="$(cmake --system-information 2>/dev/null | sed -n 's/^CMAKE_ROOT "\(.*\)"$/\1/p' | head -n 1)"
[ -n "$mod" ] && [ ! -f "$mod/Modules/GoogleTestAddTests.cmake" ] && cp .carry/GoogleTestAddTests.cmake "$mod/Modules/"
mkdir -p /usr/share/cmake-3.25/Modules && cp .carry/GoogleTestAddTests.cmake /usr/share/cmake-3.25/Modules/ 2>/dev/null
export CUBBY_TEST_REDIS_SERVER=/work/main/.carry/redis/redis-server
CUBBY_DIR="$(mktemp -d)" step ctest 100 ctest --test-dir build/gpu -L 'gpu|harness|examples' -j 12 --output-on-failure
tail -n 6 "$L/ctest.log"
# 3. fleet load: 400 fresh-store processes, 8 at a time, per backend; a cluster master killed
source .carry/servers/env.sh
step fleet_load 110 ci/fleet-load.sh build/gpu/cli/cubby "$W/fleet_load" 400 8
tail -n 12 "$W/fleet_load/fleet_load.md" 2>/dev/null
# 4. TLS vs plain Redis: the bare GET
RS="$CUBBY_TEST_REDIS_SERVER"; T=/tmp/tlsca; mkdir -p $T /tmp/rp /tmp/rt
( cd $T && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=ca \
  && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key -out server.csr -subj /CN=localhost \
  && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > san.cnf \
  && openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile san.cnf ) >"$L/ca.log" 2>&1
$RS --port 26379 --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --dir /tmp/rp --logfile /tmp/rp/log >/dev/null 2>&1
$RS --port 0 --tls-port 26380 --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --dir /tmp/rt --logfile /tmp/rt/log \
  --tls-cert-file $T/server.crt --tls-key-file $T/server.key --tls-ca-cert-file $T/ca.crt --tls-auth-clients no >/dev/null 2>&1
sleep 1
export CUBBY_REMOTE_CA_FILE=$T/ca.crt CUBBY_BENCH_BACKENDS="redis=redis://127.0.0.1:26379,rediss=rediss://127.0.0.1:26380"
step tls_get 75 build/gpu/bench/cubby_bench --benchmark_filter='BM_RemoteGet/(mdspan50|tiny)/(raw|lz4)/(redis|rediss)/' \
  --benchmark_repetitions=9 --benchmark_enable_random_interleaving=true --benchmark_min_time=0.2 \
  --benchmark_out="$W/tls_get.json" --benchmark_out_format=json
grep -hE "_median" "$L/tls_get.log" "$L/tls_lookup.log" | cut -c1-110
unset CUBBY_REMOTE_CA_FILE CUBBY_BENCH_BACKENDS
pkill -f "redis-server.*2638" 2>/dev/null
