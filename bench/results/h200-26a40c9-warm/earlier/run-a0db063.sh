#!/usr/bin/env bash
# H200: where a warm CuPy session's time goes, CuPy's own cache vs cubby (bench/tools/cupy_warm_profile.py).
set -u
R="$(pwd)"; OUT="${OUT:-/tmp/out}"; L="$OUT/logs"; mkdir -p "$L"
s=$(date +%s)
mkdir -p build/gpu && tar -xJf .gpu/p1/b.tar.xz || exit 1
echo "extract $(( $(date +%s) - s ))s" | tee -a "$OUT/status"
export LD_LIBRARY_PATH=$R/.carry/lib
export CUBBY_LIBRARY=$R/build/gpu/core/libcubby.so CUBBY_CLI=$R/build/gpu/cli/cubby PYTHONPATH=$R/pytest_plugin/src
{ nvidia-smi -L; nproc; which perf strace; cat /proc/sys/kernel/perf_event_paranoid; df -h /tmp; mount | grep -E ' / | /tmp '; } >"$L/env.txt" 2>&1
NV="$(timeout 60 python3 -c "
from cupy.cuda import compiler; compiler._get_nvrtc_version()
print([l.split()[-1] for l in open('/proc/self/maps') if 'libnvrtc.so' in l][0])" 2>>"$L/env.txt")"
[ -n "$NV" ] && export CUBBY_NVRTC_LIBRARY="$NV"
echo "CUBBY_NVRTC_LIBRARY=$NV" >>"$L/env.txt"
step() { local name="$1" limit="$2"; shift 2; local t=$(date +%s); timeout "$limit" "$@" >"$L/$name.log" 2>&1; echo "$name=$? $(( $(date +%s) - t ))s" | tee -a "$OUT/status"; }
step profile 330 python3 bench/tools/cupy_warm_profile.py --suite tests/python/gpu/test_cupy_mdspan.py --work /tmp/cwp --out "$OUT/profile.json" --rounds 5
tail -n 40 "$L/profile.log"
# The C side of a warm cubby run: perf (if the machine lets us) or strace's syscall counts.
W=/tmp/cwp; run_cubby() { CUPY_CACHE_DIR=$W/cupy-unused "$@" python3 -m pytest tests/python/gpu/test_cupy_mdspan.py -q -p no:cacheprovider -p cubby.plugin --cubby-dir=$W/store --no-cubby-prefetch; }
run_own() { CUPY_CACHE_DIR=$W/own "$@" python3 -m pytest tests/python/gpu/test_cupy_mdspan.py -q -p no:cacheprovider -p no:cubby; }
if command -v strace >/dev/null; then
  step strace_cubby 60 run_cubby strace -f -c -o "$L/strace_cubby.txt"
  step strace_own 60 run_own strace -f -c -o "$L/strace_own.txt"
  head -n 30 "$L/strace_cubby.txt" "$L/strace_own.txt"
fi
if command -v perf >/dev/null; then
  step perf_cubby 60 run_cubby perf record -F 4999 -g -o /tmp/perf.cubby --
  timeout 60 perf report -i /tmp/perf.cubby --stdio --no-children --sort dso 2>/dev/null | head -n 60 >"$L/perf_dso.txt"
  timeout 90 perf report -i /tmp/perf.cubby --stdio --no-children --sort dso,sym -g none 2>/dev/null | head -n 120 >"$L/perf_sym.txt"
  head -n 40 "$L/perf_dso.txt"; grep -i cubby "$L/perf_sym.txt" | head -n 30
fi
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
