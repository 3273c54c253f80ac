#!/usr/bin/env bash
# H200 call A (session of 2026-12-02): the fleet suite per backend (issue 26) and a check of what
# the plugin's prefetch does on a warm CuPy store under pytest -n 8 (issue 25).
set -u
R="$(pwd)"; OUT="${OUT:-/tmp/out}"; L="$OUT/logs"; mkdir -p "$L"
if [ "$R" != /work/main ]; then mkdir -p /work && ln -sfn "$R" /work/main; fi
cd /work/main || exit 1
tar -xJf .gpu/pA/b.tar.xz || exit 1
export LD_LIBRARY_PATH=/work/main/.carry/lib
{ env | grep -i python; id; nproc; } >"$OUT/env.txt" 2>&1
step() { local name="$1" limit="$2"; shift 2; local t=$(date +%s); timeout "$limit" "$@" >"$L/$name.log" 2>&1; echo "$name=$? $(( $(date +%s) - t ))s" | tee -a "$OUT/status"; }
# 1. the fleet suite (ci/gpu/fleet-run.sh bounds itself)
export CUBBY_GPU_STEP_SECONDS=320
step fleet 330 ci/gpu/fleet-run.sh "$OUT/fleet" build/gpu .carry/servers 5
tail -n 14 "$OUT/fleet/fleet_suite.log"
# 3. the prefetch on a warm CuPy store under -n 8
export CUBBY_LIBRARY=/work/main/build/gpu/core/libcubby.so CUBBY_CLI=/work/main/build/gpu/cli/cubby PYTHONPATH=/work/main/pytest_plugin/src
NV="$(timeout 60 python3 -c "
from cupy.cuda import compiler; compiler._get_nvrtc_version()
print([l.split()[-1] for l in open('/proc/self/maps') if 'libnvrtc.so' in l][0])" 2>>"$OUT/env.txt")"
[ -n "$NV" ] && export CUBBY_NVRTC_LIBRARY="$NV"
step cupy_fill 120 python3 bench/tools/cupy_warm_profile.py --suite tests/python/gpu/test_cupy_mdspan.py --work /tmp/cwd --out "$OUT/cupy_fill.json" --rounds 1 --configs cubby-nopf --xdist 8 --no-profile
S=/tmp/cwd/store; C=build/gpu/cli/cubby
$C stats --json --dir $S > "$OUT/stats0.json" 2>&1
ls $S/manifests > "$OUT/manifests.txt" 2>&1
step cupy_pf 60 python3 bench/tools/cupy_warm_profile.py --suite tests/python/gpu/test_cupy_mdspan.py --work /tmp/cwd --out "$OUT/cupy_pf.json" --rounds 2 --configs cubby,cubby-nopf --xdist 8 --no-profile
$C stats --json --dir $S > "$OUT/stats1.json" 2>&1
for m in $(ls $S/manifests); do s="${m%.manifest}"; step "warm_$s" 90 $C warm --dir $S --suite "$s" --json --timeout 60; cp "$L/warm_$s.log" "$OUT/warm_$s.json"; done
$C stats --json --dir $S > "$OUT/stats2.json" 2>&1
grep -h '"compiled"\|"warm"\|"recipes"' "$OUT"/warm_*.json
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
