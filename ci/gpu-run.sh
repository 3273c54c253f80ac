#!/usr/bin/env bash
# Runs an already-built tree's tests and benchmarks on a machine with a GPU, writing logs and
# JSON results to OUT_DIR. For GPU machines that cannot build (no GoogleTest/Benchmark there):
# build here with `cmake -S . -B build/gpu -DCMAKE_BUILD_TYPE=Release && cmake --build build/gpu`,
# copy the tree (and libbenchmark.so.1debian, via LD_LIBRARY_PATH) there, then
#   ci/gpu-run.sh build/gpu OUT_DIR [extra cubby_bench arguments]
set -uo pipefail
build_dir="$(cd "$1" && pwd)"; out="$2"; shift 2
mkdir -p "$out"
export CUBBY_DIR="$(mktemp -d /tmp/cubby-gpu-store.XXXXXX)"
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } >"$out/gpu.txt" 2>&1
status=0
ctest --test-dir "$build_dir" --output-on-failure -j 8 2>&1 | tee "$out/ctest.log" || status=1
# The GPU suites once more, verbosely, so their output (and any skip reason) is in the log.
ctest --test-dir "$build_dir" -L gpu -V 2>&1 | tail -n 60 >"$out/ctest-gpu.log" || status=1
if [ -x "$build_dir/bench/cubby_bench" ]; then
  CUBBY_BENCH_DIR="$(mktemp -d /tmp/cubby-bench.XXXXXX)" "$build_dir/bench/cubby_bench" \
    --benchmark_out="$out/bench.json" --benchmark_out_format=json \
    --benchmark_counters_tabular=true "$@" 2>&1 | tee "$out/bench.log" || status=1
fi
exit $status
