#!/usr/bin/env bash
# H200 pass over the scan memo (session 3 of 2026-12-01): the warm CuPy profile (own vs cubby),
# the real CuPy and cuda.core tests, the cuda.core hit, CuPy's cold / header-edit / -n 8 rows and
# the plugin's overhead. Each step time-bounded, in order of need.
set -u
R="$(pwd)"; OUT="${OUT:-/tmp/out}"; L="$OUT/logs"; mkdir -p "$L"
s=$(date +%s)
mkdir -p build/gpu && tar -xJf .gpu/p2/b.tar.xz || exit 1
echo "extract $(( $(date +%s) - s ))s" | tee -a "$OUT/status"
export LD_LIBRARY_PATH=$R/.carry/lib
export CUBBY_LIBRARY=$R/build/gpu/core/libcubby.so CUBBY_CLI=$R/build/gpu/cli/cubby PYTHONPATH=$R/pytest_plugin/src
{ nvidia-smi -L; nproc; cat /proc/sys/fs/inotify/max_user_watches /proc/sys/fs/inotify/max_user_instances; } >"$L/env.txt" 2>&1
NV="$(timeout 60 python3 -c "
from cupy.cuda import compiler; compiler._get_nvrtc_version()
print([l.split()[-1] for l in open('/proc/self/maps') if 'libnvrtc.so' in l][0])" 2>>"$L/env.txt")"
[ -n "$NV" ] && export CUBBY_NVRTC_LIBRARY="$NV"
echo "CUBBY_NVRTC_LIBRARY=$NV" >>"$L/env.txt"
step() { local name="$1" limit="$2"; shift 2; local t=$(date +%s); timeout "$limit" "$@" >"$L/$name.log" 2>&1; echo "$name=$? $(( $(date +%s) - t ))s" | tee -a "$OUT/status"; }
step profile 200 python3 bench/tools/cupy_warm_profile.py --suite tests/python/gpu/test_cupy_mdspan.py --work /tmp/cwp --out "$OUT/profile.json" --rounds 5 --no-profile
tail -n 45 "$L/profile.log"
step pytest_gpu 120 python3 -m pytest tests/python/gpu/test_cupy_through_cubby.py -v -rs -p no:cacheprovider
tail -n 12 "$L/pytest_gpu.log"
for i in 1 2 3; do timeout 30 python3 bench/suite/cuda_core_hit.py --out "$OUT/cuda_core_hit$i.json" >>"$L/cuda_core_hit.log" 2>&1; done
cat "$OUT"/cuda_core_hit*.json 2>/dev/null | tr -d '\n ' | cut -c1-400; echo
step cupy_suite 230 python3 bench/suite/cupy_suite.py --out "$OUT/cupy_suite.json" --work /tmp/cs --repeat 1 --parts alone,xdist,overhead --deadline 200
python3 - "$OUT/cupy_suite.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps(d.get("goals")))
for r in d["runs"]: print(r["row"], r["run"], r["seconds"], r["exit"])
PY
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
(cd "$OUT" && tar -czf results.tgz *.json && rm -f *.json)
