#!/usr/bin/env bash
# H200 call (session of 2026-12-02, third, at f86e4ad): the example suite's fleet simulation per backend with
# HTTP(S) over cubby's own client (issue 26), the GPU ctest labels and the real CuPy / cuda.core tests after it.
# Each step time-bounded. Results: results.tgz (status, fleet_suite.*, logs).
set -u
R="$(pwd)"; OUT="${OUT:-/tmp/out}"; W="$OUT/r"; L="$W/logs"; mkdir -p "$L"
if [ "$R" != /work/main ]; then mkdir -p /work && ln -sfn "$R" /work/main; fi
cd /work/main || exit 1
tar -xJf .gpu/pT/b.tar.xz || exit 1
export LD_LIBRARY_PATH=/work/main/.carry/lib
step() { local name="$1" limit="$2"; shift 2; local t=$(date +%s); timeout "$limit" "$@" >"$L/$name.log" 2>&1; echo "$name=$? $(( $(date +%s) - t ))s" | tee -a "$W/status"; tar -C "$OUT" -czf "$OUT/results.tgz" r; }
trap 'tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$W"' EXIT
python3 -m compileall -q pytest_plugin/src bench/tools >/dev/null 2>&1
{ env | grep -i python; nproc; git log -1 --format=%h 2>/dev/null; } >"$W/env.txt" 2>&1
# 1. the fleet suite, 9 runs per backend (ci/gpu/fleet-run.sh bounds itself)
export CUBBY_GPU_STEP_SECONDS=330
step fleet 340 ci/gpu/fleet-run.sh "$W/fleet" build/gpu .carry/servers 9
tail -n 10 "$W/fleet/fleet_suite.log"
# 1b. the fleet load against http and https (cubby's own HTTP client), the others briefly; GPU hidden
( source .carry/servers/env.sh; export CUDA_VISIBLE_DEVICES=; FLEET_LOAD_N_FOR="redis=50 rediss=50 unix=50 cluster=50" step load 150 ci/fleet-load.sh build/gpu/cli/cubby "$W/load" 400 8 )
tail -n 12 "$W/load/fleet_load.md" 2>/dev/null
# 2. GPU ctest labels
mod="$(cmake --system-information 2>/dev/null | sed -n 's/^CMAKE_ROOT "\(.*\)"$/\1/p' | head -n 1)"
[ -n "$mod" ] && [ ! -f "$mod/Modules/GoogleTestAddTests.cmake" ] && cp .carry/GoogleTestAddTests.cmake "$mod/Modules/"
mkdir -p /usr/share/cmake-3.25/Modules && cp .carry/GoogleTestAddTests.cmake /usr/share/cmake-3.25/Modules/ 2>/dev/null
export CUBBY_TEST_REDIS_SERVER=/work/main/.carry/redis/redis-server
CUBBY_DIR="$(mktemp -d)" step ctest 120 ctest --test-dir build/gpu -L 'gpu|harness|examples' -j 12 --output-on-failure
tail -n 5 "$L/ctest.log"
# 3. the real CuPy and cuda.core tests through the plugin
export CUBBY_LIBRARY=/work/main/build/gpu/core/libcubby.so CUBBY_CLI=/work/main/build/gpu/cli/cubby PYTHONPATH=/work/main/pytest_plugin/src
NV="$(timeout 60 python3 -c "
from cupy.cuda import compiler; compiler._get_nvrtc_version()
print([l.split()[-1] for l in open('/proc/self/maps') if 'libnvrtc.so' in l][0])" 2>>"$W/env.txt")"
[ -n "$NV" ] && export CUBBY_NVRTC_LIBRARY="$NV"
step pytest_gpu 90 python3 -m pytest tests/python/gpu -v -rs -p no:cacheprovider
tail -n 8 "$L/pytest_gpu.log"
