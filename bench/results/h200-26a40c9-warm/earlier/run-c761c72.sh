#!/usr/bin/env bash
# H200 pass over the scan memo and the nice prefetch (session 3 of 2026-12-01): CuPy's warm row
# (own vs cubby vs cubby without prefetch, 7 alternating rounds), the header-edit and -n 8 rows.
# Each step time-bounded, in order of need.
set -u
R="$(pwd)"; OUT="${OUT:-/tmp/out}"; L="$OUT/logs"; mkdir -p "$L"
s=$(date +%s)
mkdir -p build/gpu && tar -xJf .gpu/p3/b.tar.xz || exit 1
echo "extract $(( $(date +%s) - s ))s" | tee -a "$OUT/status"
export LD_LIBRARY_PATH=$R/.carry/lib
export CUBBY_LIBRARY=$R/build/gpu/core/libcubby.so CUBBY_CLI=$R/build/gpu/cli/cubby PYTHONPATH=$R/pytest_plugin/src
{ nvidia-smi -L; nproc; cat /proc/sys/fs/inotify/max_user_watches /proc/sys/fs/inotify/max_user_instances /sys/fs/cgroup/cpu.max; cat /proc/self/cgroup; } >"$L/env.txt" 2>&1
NV="$(timeout 60 python3 -c "
from cupy.cuda import compiler; compiler._get_nvrtc_version()
print([l.split()[-1] for l in open('/proc/self/maps') if 'libnvrtc.so' in l][0])" 2>>"$L/env.txt")"
[ -n "$NV" ] && export CUBBY_NVRTC_LIBRARY="$NV"
echo "CUBBY_NVRTC_LIBRARY=$NV" >>"$L/env.txt"
step() { local name="$1" limit="$2"; shift 2; local t=$(date +%s); timeout "$limit" "$@" >"$L/$name.log" 2>&1; echo "$name=$? $(( $(date +%s) - t ))s" | tee -a "$OUT/status"; }
step profile 260 python3 bench/tools/cupy_warm_profile.py --suite tests/python/gpu/test_cupy_mdspan.py --work /tmp/cwp --out "$OUT/profile.json" --rounds 7 --configs own,cubby,cubby-nopf --no-profile
tail -n 45 "$L/profile.log"
step cupy_suite 300 python3 bench/suite/cupy_suite.py --out "$OUT/cupy_suite.json" --work /tmp/cs --repeat 1 --parts alone,xdist --deadline 280
python3 - "$OUT/cupy_suite.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps(d.get("goals")))
for r in d["runs"]: print(r["row"], r["run"], r["seconds"], r["exit"])
PY
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
(cd "$OUT" && tar -czf results.tgz *.json && rm -f *.json)
