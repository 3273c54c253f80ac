#!/usr/bin/env bash
# GPU run of name recovery (issue 4), from an already-built tree (no build, no network):
#   ci/gpu/recover.sh OUT_DIR [BUILD_DIR]        BUILD_DIR default $CUBBY_BUILD_DIR, else build/ci
# 1. tests/gpu/test_gpu_enumerate: driver enumeration (cuModuleEnumerateFunctions + cuFuncGetName)
#    and the ELF symbol table give the same kernel set on mdspan50, and recovery from the
#    driver's list matches NVRTC: OUT_DIR/test_gpu_enumerate.{log,xml}. Fails if it skipped.
# 2. cubby_recovery_bench: BM_NameRecovery/<workload>/{matcher,baseline,driver,load_only}
#    (driver = load + enumerate + match; load_only = plain cuModuleLoadData, same run):
#    OUT_DIR/recovery_bench.{json,log}; the accuracy table: OUT_DIR/accuracy.md
# Exit status: non-zero if any of them failed.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_step_start recover.sh build/ci "$@"
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; uptime; } \
  >"$out/gpu.txt" 2>&1

"$build_dir/tests/test_gpu_enumerate" --gtest_output="xml:$out/test_gpu_enumerate.xml" \
  >"$out/test_gpu_enumerate.log" 2>&1 || status=1
if grep -q 'SKIPPED' "$out/test_gpu_enumerate.log"; then
  echo "GPU enumeration tests skipped: no GPU or driver?" >>"$out/test_gpu_enumerate.log"
  status=1
fi
tail -n 8 "$out/test_gpu_enumerate.log"

bench="$build_dir/bench/cubby_recovery_bench"
if [ -x "$bench" ]; then
  "$bench" --accuracy_table >"$out/accuracy.md" 2>"$out/accuracy.err" || status=1
  cat "$out/accuracy.md"
  "$bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_counters_tabular=true \
    --benchmark_out="$out/recovery_bench.json" --benchmark_out_format=json \
    >"$out/recovery_bench.log" 2>&1 || status=1
  grep -E '_median|ERROR' "$out/recovery_bench.log"
  grep -q 'ERROR OCCURRED' "$out/recovery_bench.log" && status=1
else
  echo "no $bench: build the cubby_recovery_bench target" | tee -a "$out/recovery_bench.log"
  status=1
fi
exit $status
