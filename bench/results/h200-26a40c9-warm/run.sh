#!/usr/bin/env bash
# H200, the closing pass of issue 25 (session 3 of 2026-12-01, tree in bench/results/<this folder>):
# CuPy's warm row alone (9 alternating rounds, own vs cubby) and under pytest -n 8 (5 rounds), the
# real CuPy and cuda.core tests, the cuda.core hit. Each step time-bounded.
set -u
R="$(pwd)"; OUT="${OUT:-/tmp/out}"; L="$OUT/logs"; mkdir -p "$L"
mkdir -p build/gpu && tar -xJf .gpu/p5/b.tar.xz || exit 1
export LD_LIBRARY_PATH=$R/.carry/lib
export CUBBY_LIBRARY=$R/build/gpu/core/libcubby.so CUBBY_CLI=$R/build/gpu/cli/cubby PYTHONPATH=$R/pytest_plugin/src
{ nvidia-smi -L; nproc; } >"$L/env.txt" 2>&1
NV="$(timeout 60 python3 -c "
from cupy.cuda import compiler; compiler._get_nvrtc_version()
print([l.split()[-1] for l in open('/proc/self/maps') if 'libnvrtc.so' in l][0])" 2>>"$L/env.txt")"
[ -n "$NV" ] && export CUBBY_NVRTC_LIBRARY="$NV"
echo "CUBBY_NVRTC_LIBRARY=$NV" >>"$L/env.txt"
step() { local name="$1" limit="$2"; shift 2; local t=$(date +%s); timeout "$limit" "$@" >"$L/$name.log" 2>&1; echo "$name=$? $(( $(date +%s) - t ))s" | tee -a "$OUT/status"; }
step warm_alone 200 python3 bench/tools/cupy_warm_profile.py --suite tests/python/gpu/test_cupy_mdspan.py --work /tmp/cwa --out "$OUT/warm_alone.json" --rounds 9 --configs own,cubby --no-profile
tail -n 4 "$L/warm_alone.log"
step warm_x8 150 python3 bench/tools/cupy_warm_profile.py --suite tests/python/gpu/test_cupy_mdspan.py --work /tmp/cwx --out "$OUT/warm_x8.json" --rounds 5 --configs own,cubby --xdist 8 --no-profile
tail -n 4 "$L/warm_x8.log"
step pytest_gpu 60 python3 -m pytest tests/python/gpu/test_cupy_through_cubby.py -v -rs -p no:cacheprovider
tail -n 6 "$L/pytest_gpu.log"
for i in 1 2 3; do timeout 30 python3 bench/suite/cuda_core_hit.py --out "$OUT/cuda_core_hit$i.json" >>"$L/cuda_core_hit.log" 2>&1; done
cat "$OUT"/cuda_core_hit*.json 2>/dev/null | tr -d '\n ' | cut -c1-500; echo
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
