#!/usr/bin/env bash
# cubby's main job made visible: cold vs warm for the templated mdspan workloads.
#   ci/bench.sh                                  # the default run: about 2 min after the build on a
#                                                # quiet 2-core machine (at most 5); tracked files
#                                                # are left alone
#   ci/bench.sh --full                           # everything: about 20 min on 2 cores (the
#                                                # mdspan-suite workload, 100,000-entry stores, the
#                                                # whole-suite benchmark)
#   ci/bench.sh --record                         # ... and append the record to the history
#   ci/bench.sh --benchmark_filter=mdspan50      # other arguments go to cubby_bench
#   ci/bench.sh --no-build ...                   # run what CUBBY_BUILD_DIR already has built
# Installs what it needs (Debian packages: the build's, python3 and chromium, python3-pytest for
# the pytest whole-suite row; npm packages from bench/dashboard/package-lock.json), builds
# (Release), starts a private redis-server for the remote families (BM_WarmHitRemote,
# BM_FleetFirstRun*, BM_RemoteGet; stopped at exit; none found: they skip), runs cubby_bench (and
# cubby_recovery_bench / store_bench when built) on a store in a temporary folder
# ($CUBBY_DIR/cubby-bench when CUBBY_DIR is set), then the whole-suite benchmark, prints a
# cold/warm/speedup table with the goals, and writes under bench/out/: results.json,
# github-action-benchmark/, history-line.jsonl (this run's history record), local-history.jsonl
# (every run of this checkout), history.jsonl (the committed history + the local one) and
# dashboard.html (drawn from it; the machine that just ran first, with its own verdict). Only
# --record touches a tracked file: it appends the record to bench/results/history.jsonl and draws
# the dashboard from that. The default run leaves out what takes minutes (bench/tools/bench_select.py says what:
# the mdspan-suite workload, store_bench's 100,000-entry families, the whole-suite benchmark);
# without a GPU it leaves out the GPU families too, and says once which. The first build takes
# about 15 min on 2 cores (a few with a warm ccache). A progress line comes at least every 10 s.
# Settings: CUBBY_BUILD_DIR (build/bench-release), CUBBY_BENCH_OUT (bench/out),
# CUBBY_BENCH_HISTORY (the history --record appends to; bench/results/history.jsonl),
# CUBBY_BENCH_REMOTE (a Redis URL for the remote families instead of a private redis-server; the
# suites never get one), CUBBY_BENCH_MACHINE (the machine's name on the dashboard),
# CUBBY_BENCH_SUITE=1 or 0 (the whole-suite benchmark in the default run, or not in --full),
# CUBBY_BENCH_GPU=yes|no (is a GPU usable; default: is libcuda installed), CUBBY_BENCH_DASHBOARD=0 (no dashboard),
# CUBBY_SUITE_GTEST_CMD/CUBBY_SUITE_PYTEST_CMD.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$CUBBY_ROOT/bench/dashboard/dashboard.sh"
source "$CUBBY_ROOT/bench/suite/discover.sh"

start=$SECONDS
step() { log "[$((SECONDS - start)) s] $*"; }
# Runs "$@" with a progress line every 10 s: LABEL, the seconds so far and the ESTIMATE (seconds).
with_progress() {
  local estimate="$1" label="$2" begun=$SECONDS ticker rc=0
  shift 2
  ( while sleep 10 </dev/null >/dev/null 2>&1; do
      log "[$((SECONDS - start)) s] ... $label: $((SECONDS - begun)) s so far (expected about $estimate s)"
    done ) &
  ticker=$!
  "$@" || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  return "$rc"
}
# Debian's libbenchmark is built without NDEBUG, so every benchmark binary warns "Library was built
# as DEBUG": it concerns Google Benchmark's own bookkeeping, not cubby (built Release). Said once
# (below), filtered from the binaries' stderr.
quiet_debug_warning() { "$@" 2> >(grep -v --line-buffered 'Library was built as DEBUG' >&2); }

record=0 build=1 full=0 bench_args=()
for arg in "$@"; do
  case "$arg" in
    --record) record=1 ;;
    --full) full=1 ;;
    --no-build) build=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) bench_args+=("$arg") ;;
  esac
done

if [ "$full" = 1 ]; then
  log "ci/bench.sh --full: about 20 min on a quiet 2-core machine after the build"
else
  log "ci/bench.sh: about 2 min on a 2-core machine after the build (at most 5); ci/bench.sh --full measures everything (about 20 min)"
fi
log "the build (Release): about 15 min on 2 cores the first time, a few with a warm ccache, seconds when up to date"
apt_install "${CUBBY_APT_PACKAGES[@]}" "${CUBBY_BENCH_APT_PACKAGES[@]}" "${CUBBY_PYTHON_APT_PACKAGES[@]}"
find_cuda

build_dir="${CUBBY_BUILD_DIR:-$CUBBY_ROOT/build/bench-release}"
out="${CUBBY_BENCH_OUT:-$CUBBY_ROOT/bench/out}"
committed_history="$CUBBY_ROOT/bench/results/history.jsonl"
history="${CUBBY_BENCH_HISTORY:-$committed_history}"
# CUBBY_BENCH_HISTORY=none (what older versions took for "do not append") means no --record.
[ "$history" != none ] || { record=0; history="$committed_history"; }
mkdir -p "$(dirname "$build_dir")" "$out"
# Configures (Release) and builds only what the benchmarks run: the benchmark executables, libcubby
# and the example suites.
build_benchmarks() {
  step "configuring (Release) in $build_dir"
  cmake -S "$CUBBY_ROOT" -B "$build_dir" -DCUDAToolkit_ROOT="$CUDA_HOME" -DCMAKE_BUILD_TYPE=Release \
    -DCUBBY_BUILD_TESTS=ON >"$build_dir.configure.log" 2>&1 \
    || { cat "$build_dir.configure.log" >&2; die "cmake configure failed (log above)"; }
  local examples targets
  examples="$(sed -n 's/^add_executable(\([A-Za-z0-9_]*\).*/\1/p' "$CUBBY_ROOT/tests/examples/CMakeLists.txt" 2>/dev/null | paste -sd'|' -)"
  mapfile -t targets < <(cmake --build "$build_dir" --target help 2>/dev/null \
    | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p' \
    | grep -E "^(cubby_bench|cubby_recovery_bench|store_bench|libcubby${examples:+|$examples})\$" || true)
  [ ${#targets[@]} -gt 0 ] || targets=(cubby_bench)
  step "building ${targets[*]} with $(nproc 2>/dev/null || echo 2) jobs"
  with_progress 900 "building" \
    cmake --build "$build_dir" -j "$(nproc 2>/dev/null || echo 2)" --target "${targets[@]}" || die "build failed"
}

if [ "$build" = 0 ]; then
  [ -x "$build_dir/bench/cubby_bench" ] \
    || die "--no-build: no $build_dir/bench/cubby_bench; build it first (ci/bench.sh without --no-build) or set CUBBY_BUILD_DIR"
  step "--no-build: running what $build_dir has"
else
  build_benchmarks
fi

temp_store=""
cleanup() {
  if [ -n "$temp_store" ]; then
    step "removing the temporary store $temp_store ($(du -sh "$temp_store" 2>/dev/null | cut -f1))"
    rm -rf "$temp_store"
  fi
  stop_test_redis
}
trap cleanup EXIT
if [ -n "${CUBBY_DIR:-}" ]; then
  export CUBBY_BENCH_DIR="$CUBBY_DIR/cubby-bench"
  mkdir -p "$CUBBY_BENCH_DIR"
  store_note="$CUBBY_BENCH_DIR (kept)"
else
  temp_store="$(mktemp -d /tmp/cubby-bench.XXXXXX)"
  export CUBBY_BENCH_DIR="$temp_store"
  store_note="$CUBBY_BENCH_DIR (temporary)"
fi

# The remote families get a Redis of their own (a shared one would mix in other entries); nothing
# else does: a remote in the suites' environment would serve their cold runs.
unset CUBBY_REMOTE CUBBY_REMOTE_MODE CUBBY_REMOTE_SECRET
bench_remote="${CUBBY_BENCH_REMOTE:-}"
if [ -z "$bench_remote" ]; then
  start_test_redis
  bench_remote="${CUBBY_TEST_REDIS_URL:-}"
  unset CUBBY_TEST_REDIS_URL
fi
if [ -n "$bench_remote" ]; then
  step "remote families against $(sed 's#//[^@]*@#//***@#' <<<"$bench_remote")"
else
  log "skipped: the remote families (no redis-server: apt-get install redis-server, or set CUBBY_BENCH_REMOTE)"
fi

# What runs (bench/tools/bench_select.py): without a GPU, no GPU family; without --full, none of
# the benchmarks that take minutes. A --benchmark_filter of the caller's wins.
if [ -n "${CUBBY_BENCH_GPU:-}" ]; then
  gpu="$CUBBY_BENCH_GPU"
elif ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  gpu=yes
else
  gpu=no
fi
select_args=(--gpu "$gpu")
[ "$full" = 0 ] || select_args+=(--full)
user_filter=0
for arg in ${bench_args[@]+"${bench_args[@]}"}; do
  case "$arg" in --benchmark_filter=*) user_filter=1 ;; esac
done
[ "$gpu" = yes ] || log "no GPU here (no libcuda): the GPU families are left out; the lines below say which"
log "note: Google Benchmark (Debian's libbenchmark, built without NDEBUG) warns 'Library was built as DEBUG': that concerns its own bookkeeping, not cubby's code (Release); the warning is filtered"
# The --benchmark_filter argument for BINARY's benchmarks (also says once what it left out; none
# when they cannot be listed).
selection() {
  local names filter
  names="$("$1" --benchmark_list_tests 2>/dev/null)" \
    || { log "cannot list the benchmarks of $1: running them all"; return 0; }
  filter="$(/usr/bin/python3 "$CUBBY_ROOT/bench/tools/bench_select.py" "${select_args[@]}" --regex --explain <<<"$names")"
  echo "--benchmark_filter=${filter:-^$}"
}
filter_args=()
if [ "$user_filter" = 0 ]; then
  filter="$(selection "$build_dir/bench/cubby_bench")"
  [ -z "$filter" ] || filter_args=("$filter")
fi

if [ "$full" = 1 ]; then bench_estimate=900; else bench_estimate=60; fi
step "running cubby_bench on $store_note; cold compiles take a while (about $bench_estimate s on 2 cores)"
CUBBY_REMOTE="$bench_remote" with_progress "$bench_estimate" "cubby_bench (cold compiles, then warm hits)" \
  quiet_debug_warning "$build_dir/bench/cubby_bench" --benchmark_out="$out/cubby_bench.json" \
  --benchmark_out_format=json --benchmark_counters_tabular=true ${filter_args[@]+"${filter_args[@]}"} \
  ${bench_args[@]+"${bench_args[@]}"}

report_args=(--bench "$out/cubby_bench.json" --out "$out")
if [ -x "$build_dir/bench/cubby_recovery_bench" ]; then
  step "running cubby_recovery_bench (BM_NameRecovery; it compiles its corpora first)"
  recovery_filter="$(/usr/bin/python3 "$CUBBY_ROOT/bench/tools/bench_select.py" "${select_args[@]}" --recovery)"
  [ -z "$recovery_filter" ] || log "left out without a GPU: BM_NameRecovery/*/{driver,load_only} (driver enumeration)"
  with_progress 30 "cubby_recovery_bench" quiet_debug_warning "$build_dir/bench/cubby_recovery_bench" \
    --benchmark_out="$out/recovery_bench.json" \
    --benchmark_out_format=json --benchmark_counters_tabular=true \
    ${recovery_filter:+--benchmark_filter="$recovery_filter"} \
    && report_args+=(--recovery "$out/recovery_bench.json") \
    || log "cubby_recovery_bench failed; name-recovery results skipped"
else
  log "skipped: cubby_recovery_bench is not built (name recovery, issue 4); no BM_NameRecovery results"
fi
if [ -x "$build_dir/bench/store_bench" ]; then
  store_filter="$(selection "$build_dir/bench/store_bench")"
  store_args=()
  [ -z "$store_filter" ] || store_args=("$store_filter")
  if [ "$full" = 1 ]; then store_estimate=200; else store_estimate=20; fi
  step "running store_bench (about $store_estimate s)"
  with_progress "$store_estimate" "store_bench" quiet_debug_warning "$build_dir/bench/store_bench" \
    ${store_args[@]+"${store_args[@]}"} --benchmark_out="$out/store_bench.json" --benchmark_out_format=json \
    && report_args+=(--extra-bench "$out/store_bench.json") || log "store_bench failed; skipped"
fi

# The whole-suite benchmark: in the full run (CUBBY_BENCH_SUITE=1 adds it to the default run).
if [ "${CUBBY_BENCH_SUITE:-$full}" = 0 ]; then
  log "left out: the whole-suite benchmark (the example suites cold, warm and after a header edit: about 10 min; ci/bench.sh --full or CUBBY_BENCH_SUITE=1)"
else
  if [ -x "$CUBBY_ROOT/ci/suite-timing.sh" ] && [ -x "$build_dir/tests/examples/test_mdspan_transform" ] \
     && [ -z "${CUBBY_SUITE_GTEST_CMD:-}" ]; then
    step "whole-suite benchmark, example GoogleTest suite (ci/suite-timing.sh): cold, then warm"
    if with_progress 300 "ci/suite-timing.sh" "$CUBBY_ROOT/ci/suite-timing.sh" "$build_dir" "$out/suite-timing"; then
      report_args+=(--suite-timing "$out/suite-timing/timing.json")
      export CUBBY_SUITE_GTEST_TIMED=1
    else
      log "ci/suite-timing.sh failed; timing the example suite with bench/suite/whole_suite.py instead"
    fi
  fi
  discover_suites "$CUBBY_ROOT" "$build_dir"
  step "whole-suite benchmark: each suite on an empty store (cold), again (warm), then after a header edit (entries removed, manifests kept; prefetch)"
  # With the cubby tool, each run also records its hits, misses and compile time saved.
  [ -x "$build_dir/cli/cubby" ] && SUITE_ARGS+=(--cubby "$build_dir/cli/cubby")
  with_progress 400 "whole-suite benchmark" \
    /usr/bin/python3 "$CUBBY_ROOT/bench/suite/whole_suite.py" "${SUITE_ARGS[@]}" --out "$out/suite.json" \
    || log "a whole-suite run failed (see $out/suite-logs); its ratio is left out"
  report_args+=(--suite "$out/suite.json")
fi

# This run's record goes to bench/out/history-line.jsonl and to bench/out/local-history.jsonl (every
# run of this checkout, untracked: the verdict's earlier runs of this machine); --record appends it
# to the history too. The report ends with the verdict on this machine's runs.
: >"$out/history-line.jsonl"  # emptied: this run only
local_history="$out/local-history.jsonl"
step "summary"
/usr/bin/python3 "$CUBBY_ROOT/bench/tools/bench_report.py" "${report_args[@]}" --history "$out/history-line.jsonl" \
  --compare-history "$history" --compare-history "$local_history"
cat "$out/history-line.jsonl" >>"$local_history"
if [ "$record" = 1 ]; then
  [ -f "$history" ] || log "no history at $history: starting one"
  cat "$out/history-line.jsonl" >>"$history"
  dashboard_history="$history"
  log "recorded: appended this run to $history"
else
  # The dashboard still shows this run (and this checkout's earlier ones) beside the committed
  # ones, from a copy under $out.
  { cat "$committed_history" 2>/dev/null || true; cat "$local_history"; } >"$out/history.jsonl"
  dashboard_history="$out/history.jsonl"
  log "not recorded (--record appends the run to $history)"
fi

if [ "${CUBBY_BENCH_DASHBOARD:-1}" != 0 ]; then
  step "regenerating the dashboard"
  if with_progress 15 "the dashboard" dashboard_build "$dashboard_history" "$out/dashboard.html" \
       --current "$out/history-line.jsonl"; then
    log "dashboard: $out/dashboard.html (one file, opens offline)"
  else
    log "dashboard not regenerated (see above); the results are written"
  fi
fi
step "done"
