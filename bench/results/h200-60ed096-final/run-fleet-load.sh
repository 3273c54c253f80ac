#!/usr/bin/env bash
# H200 call C (session of 2026-12-02): the fleet load (issue 26), every backend and both kill cases,
# with the GPU hidden from the 400 `cubby compile` processes per backend (CUDA_VISIBLE_DEVICES=):
# with it each process also starts the CUDA driver (~0.36 s a process measured in call B), which
# the remote tier's load does not need and which made the whole load outlast its step.
set -u
R="$(pwd)"; OUT="${OUT:-/tmp/out}"; W="$OUT/r"; mkdir -p "$W"
if [ "$R" != /work/main ]; then mkdir -p /work && ln -sfn "$R" /work/main; fi
cd /work/main || exit 1
tar -xJf .gpu/pC/b.tar.xz || exit 1
export LD_LIBRARY_PATH=/work/main/.carry/lib
source .carry/servers/env.sh
s=$(date +%s)
CUDA_VISIBLE_DEVICES= timeout 200 ci/fleet-load.sh build/gpu/cli/cubby "$W/fleet_load" 400 8 >"$W/fleet_load.log" 2>&1
echo "fleet_load=$? $(( $(date +%s) - s ))s" | tee "$OUT/status"
cat "$W/fleet_load/fleet_load.md" 2>/dev/null || tail -n 20 "$W/fleet_load.log"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$W"
