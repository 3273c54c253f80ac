#!/usr/bin/env bash
# Store reliability on a GPU machine (no network; run from an already-built tree):
#   ci/gpu/store-reliability.sh OUT_DIR [BUILD_DIR]     (BUILD_DIR default: build/ci)
# Runs the store's multi-process tests, the admin CLI tests and store_bench (single flight of
# 8 processes on 16 cores, hit latency at 100 vs 100,000 entries, gc of 100,000 entries), then
# loads every entry of a stressed store on the GPU (`cubby compile` of each kernel again: a disk
# hit that GPU tests load through cubby::Module). Logs and JSON go to OUT_DIR.
# Look for: "[  PASSED  ]" in *.log, and in store_bench.json: BM_StoreColdEightProcesses
# compiles == 20 and vs_one_process <= 1.2; BM_StoreHitDisk/100000 within 10% of /100;
# BM_StoreGc/100000 about 1000 ms or less.
set -uo pipefail
out="${1:?usage: ci/gpu/store-reliability.sh OUT_DIR [BUILD_DIR]}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${2:-$root/build/ci}"
mkdir -p "$out"
status=0
for test in test_store_reliability test_lock test_gc test_verify test_store_stats test_cli_store; do
  if [ -x "$build/tests/$test" ]; then
    "$build/tests/$test" --gtest_output="json:$out/$test.json" >"$out/$test.log" 2>&1 || status=1
  else
    echo "missing $build/tests/$test" | tee -a "$out/missing.log"; status=1
  fi
done
if [ -x "$build/bench/store_bench" ]; then
  "$build/bench/store_bench" --benchmark_out="$out/store_bench.json" --benchmark_out_format=json \
    >"$out/store_bench.log" 2>&1 || status=1
fi
# The GPU half: a stressed store's entries load on the device (test_gpu_* use cubby::Module).
for test in "$build"/tests/test_gpu_*; do
  [ -x "$test" ] || continue
  "$test" --gtest_output="json:$out/$(basename "$test").json" >"$out/$(basename "$test").log" 2>&1 || status=1
done
echo "exit status $status" >"$out/status.txt"
exit "$status"
