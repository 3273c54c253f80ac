#!/usr/bin/env bash
# The benchmarks on a GPU machine, from an already-built tree (no build, no network there).
#   ci/gpu/bench.sh OUT_DIR [BUILD_DIR]      (BUILD_DIR: $CUBBY_BUILD_DIR, else build/gpu)
# Runs cubby_bench (every family, GPU ones included), cubby_recovery_bench when built, and the
# whole-suite benchmark (example GoogleTest suite + pytest suite, cold then warm), each on a fresh
# temporary store. Writes to OUT_DIR: gpu.txt, cubby_bench.{json,log}, recovery_bench.json,
# suite.json + suite-logs/, summary.txt (the table and the goals), results.json,
# github-action-benchmark/, and history-line.jsonl: the record to append to
# bench/results/history.jsonl (`cat OUT_DIR/history-line.jsonl >> bench/results/history.jsonl`).
# CUBBY_BENCH_ARGS: extra cubby_bench arguments (e.g. --benchmark_filter=mdspan50).
# CUBBY_BENCH_SUITES=0: cubby_bench (and the recovery benchmark) only, no whole-suite timings.
# The remote families (BM_WarmHitRemote, BM_FleetFirstRun, BM_FleetFirstRunLoaded) run against
# $CUBBY_REMOTE when set, else against a private redis-server started here when one is found
# ($CUBBY_TEST_REDIS_SERVER, e.g. the one ci/gpu/carry.sh collects, else PATH); else they skip.
# Libraries the build machine had and this one lacks (libbenchmark) go on LD_LIBRARY_PATH.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$root/ci/lib.sh"  # start_test_redis
gpu_step_start bench.sh build/gpu "$@"
log() { printf '[cubby gpu bench %s] %s\n' "$(date +%T)" "$*" >&2; }

source "$root/bench/suite/discover.sh"
python="$(command -v python3 || echo /usr/bin/python3)"

{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } >"$out/gpu.txt" 2>&1
gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | awk 'NR == 1')"
log "GPU: ${gpu_name:-none found}"

store="$(mktemp -d /tmp/cubby-gpu-bench.XXXXXX)"
trap 'rm -rf "$store"; stop_test_redis' EXIT
# Given to cubby_bench only: a remote in the suites' environment would serve their cold runs.
bench_remote="${CUBBY_REMOTE:-}"
unset CUBBY_REMOTE
if [ -z "$bench_remote" ]; then
  start_test_redis
  bench_remote="${CUBBY_TEST_REDIS_URL:-}"
fi
log "remote families: ${bench_remote:+against $(sed 's#//[^@]*@#//***@#' <<<"$bench_remote")}${bench_remote:-skipped (no Redis)}"
log "cubby_bench (mdspan-suite cold: 25 compiles, about a minute)"
CUBBY_BENCH_DIR="$store/bench" CUBBY_REMOTE="$bench_remote" "$build_dir/bench/cubby_bench" --benchmark_out="$out/cubby_bench.json" \
  --benchmark_out_format=json --benchmark_counters_tabular=true ${CUBBY_BENCH_ARGS:-} 2>&1 \
  | tee "$out/cubby_bench.log" || status=1
report=(--bench "$out/cubby_bench.json")
if [ -x "$build_dir/bench/cubby_recovery_bench" ]; then
  log "cubby_recovery_bench"
  CUBBY_BENCH_DIR="$store/recovery" "$build_dir/bench/cubby_recovery_bench" --benchmark_out="$out/recovery_bench.json" \
    --benchmark_out_format=json 2>&1 | tee "$out/recovery_bench.log" && report+=(--recovery "$out/recovery_bench.json")
else
  log "skipped: cubby_recovery_bench not built"
fi
if [ "${CUBBY_BENCH_SUITES:-1}" = 0 ]; then
  log "skipped: the whole-suite timings (CUBBY_BENCH_SUITES=0)"
elif [ -x "$root/ci/suite-timing.sh" ] && [ -x "$build_dir/tests/examples/test_mdspan_transform" ]; then
  log "example GoogleTest suite, cold then warm (ci/suite-timing.sh)"
  if "$root/ci/suite-timing.sh" "$build_dir" "$out/suite-timing" 2>&1 | tee "$out/suite-timing.log"; then
    report+=(--suite-timing "$out/suite-timing/timing.json")
    export CUBBY_SUITE_GTEST_TIMED=1
  else
    status=1
  fi
fi
if [ "${CUBBY_BENCH_SUITES:-1}" != 0 ]; then
  discover_suites "$root" "$build_dir"
  log "whole-suite benchmark"
  "$python" "$root/bench/suite/whole_suite.py" "${SUITE_ARGS[@]}" --store "$store/suites" --out "$out/suite.json" \
    2>&1 | tee "$out/suite.log" || status=1
  report+=(--suite "$out/suite.json")
fi
rm -f "$out/history-line.jsonl"
"$python" "$root/bench/tools/bench_report.py" "${report[@]}" --out "$out" --history "$out/history-line.jsonl" \
  --gpu-name "${gpu_name:-}" --root "$root" 2>&1 | tee "$out/summary.txt" || status=1
exit $status
