#!/usr/bin/env bash
# cubby's main job made visible: cold vs warm for the templated mdspan workloads.
#   ci/bench.sh                                  # everything
#   ci/bench.sh --benchmark_filter=mdspan50      # extra arguments go to cubby_bench
# Installs what it needs (Debian packages; npm packages from bench/dashboard/package-lock.json),
# builds (Release), runs cubby_bench (and cubby_recovery_bench / store_bench when built) on a store in a
# temporary folder ($CUBBY_DIR/cubby-bench when CUBBY_DIR is set), then the whole-suite benchmark,
# prints a cold/warm/speedup table, writes bench/out/results.json (+ github-action-benchmark
# files), appends the record to bench/results/history.jsonl and regenerates the dashboard
# (bench/out/dashboard.html). Without a GPU the GPU families report "skipped: no GPU".
# Settings: CUBBY_BUILD_DIR (build/bench-release), CUBBY_BENCH_OUT (bench/out),
# CUBBY_BENCH_HISTORY (bench/results/history.jsonl; "none": do not append),
# CUBBY_BENCH_SUITE=0 (skip the whole-suite benchmark), CUBBY_SUITE_GTEST_CMD/CUBBY_SUITE_PYTEST_CMD.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$CUBBY_ROOT/bench/dashboard/dashboard.sh"
source "$CUBBY_ROOT/bench/suite/discover.sh"

start=$SECONDS
step() { log "[$((SECONDS - start)) s] $*"; }

apt_install "${CUBBY_APT_PACKAGES[@]}" "${CUBBY_BENCH_APT_PACKAGES[@]}"
find_cuda

build_dir="${CUBBY_BUILD_DIR:-$CUBBY_ROOT/build/bench-release}"
out="${CUBBY_BENCH_OUT:-$CUBBY_ROOT/bench/out}"
history="${CUBBY_BENCH_HISTORY:-$CUBBY_ROOT/bench/results/history.jsonl}"
mkdir -p "$(dirname "$build_dir")" "$out"
step "configuring (Release) in $build_dir"
cmake -S "$CUBBY_ROOT" -B "$build_dir" -DCUDAToolkit_ROOT="$CUDA_HOME" -DCMAKE_BUILD_TYPE=Release \
  -DCUBBY_BUILD_TESTS=ON >"$build_dir.configure.log" 2>&1 \
  || { cat "$build_dir.configure.log" >&2; die "cmake configure failed (log above)"; }
# Only what the benchmarks run: the benchmark executables, libcubby and the example suites.
examples="$(sed -n 's/^add_executable(\([A-Za-z0-9_]*\).*/\1/p' "$CUBBY_ROOT/tests/examples/CMakeLists.txt" 2>/dev/null | paste -sd'|' -)"
mapfile -t targets < <(cmake --build "$build_dir" --target help 2>/dev/null \
  | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p' \
  | grep -E "^(cubby_bench|cubby_recovery_bench|store_bench|libcubby${examples:+|$examples})\$" || true)
[ ${#targets[@]} -gt 0 ] || targets=(cubby_bench)
step "building ${targets[*]} with $(nproc 2>/dev/null || echo 2) jobs"
cmake --build "$build_dir" -j "$(nproc 2>/dev/null || echo 2)" --target "${targets[@]}" || die "build failed"

if [ -n "${CUBBY_DIR:-}" ]; then
  export CUBBY_BENCH_DIR="$CUBBY_DIR/cubby-bench"
  mkdir -p "$CUBBY_BENCH_DIR"
  store_note="$CUBBY_BENCH_DIR (kept)"
else
  export CUBBY_BENCH_DIR="$(mktemp -d /tmp/cubby-bench.XXXXXX)"
  trap 'rm -rf "$CUBBY_BENCH_DIR"' EXIT
  store_note="$CUBBY_BENCH_DIR (temporary)"
fi

step "running cubby_bench on $store_note; cold compiles take a while (mdspan-suite: 25 programs, about a minute)"
"$build_dir/bench/cubby_bench" --benchmark_out="$out/cubby_bench.json" --benchmark_out_format=json \
  --benchmark_counters_tabular=true "$@"

report_args=(--bench "$out/cubby_bench.json" --out "$out")
if [ -x "$build_dir/bench/cubby_recovery_bench" ]; then
  step "running cubby_recovery_bench (BM_NameRecovery)"
  "$build_dir/bench/cubby_recovery_bench" --benchmark_out="$out/recovery_bench.json" \
    --benchmark_out_format=json --benchmark_counters_tabular=true \
    && report_args+=(--recovery "$out/recovery_bench.json") \
    || log "cubby_recovery_bench failed; name-recovery results skipped"
else
  log "skipped: cubby_recovery_bench is not built (name recovery, issue 4); no BM_NameRecovery results"
fi
if [ -x "$build_dir/bench/store_bench" ]; then
  step "running store_bench"
  "$build_dir/bench/store_bench" --benchmark_out="$out/store_bench.json" --benchmark_out_format=json \
    && report_args+=(--extra-bench "$out/store_bench.json") || log "store_bench failed; skipped"
fi

if [ "${CUBBY_BENCH_SUITE:-1}" != "0" ]; then
  if [ -x "$CUBBY_ROOT/ci/suite-timing.sh" ] && [ -x "$build_dir/tests/examples/test_mdspan_transform" ] \
     && [ -z "${CUBBY_SUITE_GTEST_CMD:-}" ]; then
    step "whole-suite benchmark, example GoogleTest suite (ci/suite-timing.sh): cold, then warm"
    if "$CUBBY_ROOT/ci/suite-timing.sh" "$build_dir" "$out/suite-timing"; then
      report_args+=(--suite-timing "$out/suite-timing/timing.json")
      export CUBBY_SUITE_GTEST_TIMED=1
    else
      log "ci/suite-timing.sh failed; timing the example suite with bench/suite/whole_suite.py instead"
    fi
  fi
  discover_suites "$CUBBY_ROOT" "$build_dir"
  step "whole-suite benchmark: each suite on an empty store (cold), again (warm), then after a header edit (entries removed, manifests kept; prefetch)"
  /usr/bin/python3 "$CUBBY_ROOT/bench/suite/whole_suite.py" "${SUITE_ARGS[@]}" --out "$out/suite.json" \
    || log "a whole-suite run failed (see $out/suite-logs); its ratio is left out"
  report_args+=(--suite "$out/suite.json")
fi

[ "$history" != "none" ] && report_args+=(--history "$history")
step "summary"
/usr/bin/python3 "$CUBBY_ROOT/bench/tools/bench_report.py" "${report_args[@]}"

if [ "$history" != "none" ]; then
  step "regenerating the dashboard"
  if dashboard_build "$history" "$out/dashboard.html"; then
    log "dashboard: $out/dashboard.html (one file, opens offline)"
  else
    log "dashboard not regenerated (see above); the results and history are written"
  fi
fi
step "done"
