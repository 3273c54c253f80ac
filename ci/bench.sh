#!/usr/bin/env bash
# cubby's main job made visible: cold vs warm for the templated mdspan workloads.
# Builds the benchmark (Release), runs it on a store in a temporary folder (or $CUBBY_BENCH_DIR),
# prints Google Benchmark's table and writes the JSON to bench/results/latest.json (or $CUBBY_BENCH_OUT).
#   ci/bench.sh                                  # all families
#   ci/bench.sh --benchmark_filter=mdspan50      # extra arguments go to cubby_bench
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

apt_install "${CUBBY_APT_PACKAGES[@]}"
find_cuda

build_dir="${CUBBY_BUILD_DIR:-$CUBBY_ROOT/build/bench}"
mkdir -p "$(dirname "$build_dir")"
configure_and_build "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCUBBY_BUILD_TESTS=OFF

out="${CUBBY_BENCH_OUT:-$CUBBY_ROOT/bench/results/latest.json}"
mkdir -p "$(dirname "$out")"
log "running cubby_bench (results: $out)"
"$build_dir/bench/cubby_bench" --benchmark_out="$out" --benchmark_out_format=json \
  --benchmark_counters_tabular=true "$@"
