#!/usr/bin/env bash
# One GPU-machine pass for issue 25 (h-pyjit2): goal measurements, real-CuPy tests, cuda.core hit.
set -u
P="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT/logs"
export LD_LIBRARY_PATH="$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUBBY_LIBRARY="$P/lib/libcubby.so" CUBBY_CLI="$P/bin/cubby"
export PYTHONPATH="$P/pytest_plugin/src"
unset CUBBY_DIR CUBBY_DISABLE CUBBY_REQUIRE_WARM CUBBY_NO_CUPY CUBBY_STATS_FILE CUPY_CACHE_IN_MEMORY CUBBY_PCH CUBBY_JOBS
NV="$(timeout 60 python3 -c "
from cupy.cuda import compiler; compiler._get_nvrtc_version()
print([l.split()[-1] for l in open('/proc/self/maps') if 'libnvrtc.so' in l][0])" 2>>"$OUT/logs/env.txt")"
[ -n "$NV" ] && export CUBBY_NVRTC_LIBRARY="$NV"
{ nvidia-smi -L; timeout 60 python3 -c 'import cupy, pytest, sys; print("cupy", cupy.__version__, "pytest", pytest.__version__, sys.version)';
  timeout 30 python3 -c 'import cuda.core; print("cuda.core", cuda.core.__version__)'; echo "CUBBY_NVRTC_LIBRARY=$NV";
  timeout 30 python3 -c 'import xdist; print("xdist", xdist.__version__)'; nproc; } >>"$OUT/logs/env.txt" 2>&1
timeout "${SUITE_S:-380}" python3 "$P/bench/suite/cupy_suite.py" --out "$OUT/cupy_suite.json" --work /tmp/cupy-suite \
  --repeat "${REPEAT:-2}" --deadline "${DEADLINE:-250}" --parts "${PARTS:-overhead,alone,xdist}" >"$OUT/logs/cupy_suite.log" 2>&1
echo "cupy_suite rc $?"
timeout 120 python3 -m pytest "$P/tests/python/gpu/test_cupy_through_cubby.py" -v -rs -p no:cacheprovider \
  >"$OUT/logs/gpu_tests.log" 2>&1; echo "gpu tests rc $?"; tail -15 "$OUT/logs/gpu_tests.log"
timeout 60 python3 "$P/bench/suite/cuda_core_hit.py" --out "$OUT/cuda_core_hit.json" >"$OUT/logs/cuda_core_hit.log" 2>&1
echo "cuda_core_hit rc $?"; cat "$OUT/cuda_core_hit.json" 2>/dev/null | head -30
python3 - "$OUT/cupy_suite.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps(d["suites"])); print(json.dumps(d["goals"], indent=1))
for r in d["runs"]:
    if r["row"] != "overhead": print(r["row"], r["run"], r["seconds"], r["exit"], " | ".join(r["summary"])[:300])
PY
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$OUT/logs"
