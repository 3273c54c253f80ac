#!/usr/bin/env bash
set -u
P="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT/logs"
export LD_LIBRARY_PATH="$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUBBY_LIBRARY="$P/lib/libcubby.so" CUBBY_CLI="$P/bin/cubby" PYTHONPATH="$P/pytest_plugin/src"
unset CUBBY_DIR CUBBY_DISABLE CUBBY_REQUIRE_WARM CUBBY_NO_CUPY CUBBY_STATS_FILE CUPY_CACHE_IN_MEMORY CUBBY_PCH CUBBY_JOBS
export CUBBY_NVRTC_LIBRARY="$(timeout 60 python3 -c "
from cupy.cuda import compiler; compiler._get_nvrtc_version()
print([l.split()[-1] for l in open('/proc/self/maps') if 'libnvrtc.so' in l][0])")"
CUPY_CACHE_DIR=/tmp/eq-own timeout 60 python3 "$P/diag2.py" eq > "$OUT/logs/eq.log" 2>&1; echo "eq rc $?"; cut -c1-600 "$OUT/logs/eq.log" | head -30
timeout 200 python3 "$P/bench/suite/cupy_suite.py" --out "$OUT/cupy_suite2.json" --work /tmp/cs2 --parts warm,xdist \
  --repeat 1 --warm-repeat "${WR:-5}" --deadline 150 > "$OUT/logs/cupy_suite2.log" 2>&1; echo "suite rc $?"
CUPY_CACHE_DIR=/tmp/cs2/own-warm timeout 30 python3 "$P/diag2.py" warm "" > "$OUT/logs/permodule.log" 2>&1
CUPY_CACHE_DIR=/tmp/cs2/unused timeout 30 python3 "$P/diag2.py" warm /tmp/cs2/store-warm >> "$OUT/logs/permodule.log" 2>&1
CUPY_CACHE_DIR=/tmp/cs2/own-warm timeout 30 python3 "$P/diag2.py" warm "" >> "$OUT/logs/permodule.log" 2>&1
CUPY_CACHE_DIR=/tmp/cs2/unused timeout 30 python3 "$P/diag2.py" warm /tmp/cs2/store-warm >> "$OUT/logs/permodule.log" 2>&1
cut -c1-700 "$OUT/logs/permodule.log" | grep -v Warn | tail -8
for i in 1 2 3; do timeout 40 python3 "$P/bench/suite/cuda_core_hit.py" --out "$OUT/cuda_core_hit$i.json" >>"$OUT/logs/cuda_core_hit.log" 2>&1; tr -d '\n ' < "$OUT/cuda_core_hit$i.json"; echo; done
python3 - "$OUT/cupy_suite2.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps(d["suites"])); print(json.dumps(d["goals"]))
for r in d["runs"]: print(r["row"], r["run"], r["seconds"], r["exit"], " | ".join(r["summary"])[:200])
PY
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$OUT/logs"
