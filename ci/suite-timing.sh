#!/usr/bin/env bash
# Whole-suite wall time of the example GoogleTest suite (tests/examples), first run on an empty
# cubby store (cold) vs second run (warm), printed as Markdown tables. On a machine without a
# GPU the launch tests skip, so this times the compile-only tests; on a GPU machine, the full
# suite.
#
# "Compilation removed entirely": the warm run minus what cubby adds to it. The harness times
# every call of cubby::testing::compile (KernelTest::compile) and reports the sums in the run's
# XML report: cubby_lookup_ms (calls served from the store: key derivation, memory or disk read,
# entry decode and checks, NVRTC's one-time location) and cubby_miss_ms (calls that compiled;
# 0 on a warm run). The same suite with compilation removed still starts, creates its CUDA
# context, loads its modules and launches its kernels, so its time is warm - (lookup + miss).
# cubby_arch_probe_ms (the one-time GPU probe for the default arch: cuInit and a device query)
# is reported apart: a suite that launches kernels initialises the driver anyway; the
# conservative ratio counts it as cubby's too.
# Each warm figure is the run of median wall time among CUBBY_TIMING_WARM_RUNS (default 5) runs.
#   ci/suite-timing.sh [BUILD_DIR [OUT_DIR]]      BUILD_DIR default build/ci (already built)
# OUT_DIR (optional) receives each run's log and XML report, and timing.json.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-$root/build/ci}"
out="${2:-}"
bin="$build_dir/tests/examples"
for exe in test_mdspan_transform test_mdspan_reuse; do
  [ -x "$bin/$exe" ] || { echo "error: $bin/$exe not found; build the tree first (ci/test.sh, or cmake --build $build_dir --target $exe)" >&2; exit 1; }
done
logs="$(mktemp -d /tmp/cubby-suite-timing.XXXXXX)"
store="$logs/store"
trap 'rm -rf "$logs"' EXIT
export CUBBY_DIR="$store"
unset CUBBY_REQUIRE_WARM GTEST_FILTER GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX GTEST_OUTPUT

now() { date +%s.%N; }
# run NAME EXE [ARGS...]: runs a suite binary with an XML report ($logs/NAME.xml), records its
# wall seconds in $seconds.
run() {
  local name="$1"; shift
  local start end
  start="$(now)"
  "$@" --gtest_output="xml:$logs/$name.xml" >"$logs/$name.log" 2>&1 \
    || { cat "$logs/$name.log" >&2; echo "error: $name failed" >&2; exit 1; }
  end="$(now)"
  seconds="$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f", b - a }')"
}
# attr NAME ATTRIBUTE: an attribute of <testsuites> (the run's totals) in NAME's XML report.
attr() {
  local value
  value="$(sed -n "s/.*<testsuites [^>]* $2=\"\([0-9.]*\)\".*/\1/p" "$logs/$1.xml" | head -1)"
  [ -n "$value" ] || { echo "error: no $2 in $logs/$1.xml; is the harness built from this tree?" >&2; exit 1; }
  echo "$value"
}

run cold_transform "$bin/test_mdspan_transform"; cold_t="$seconds"
run cold_reuse "$bin/test_mdspan_reuse" --cubby_require_warm; cold_r="$seconds"
# warm NAME EXE [ARGS...]: $warm_runs warm runs; the one of median wall time becomes NAME (its
# log, its XML report, $seconds), so that its lookup time comes from the same run.
warm_runs="${CUBBY_TIMING_WARM_RUNS:-5}"
warm() {
  local name="$1"; shift
  local i times=()
  for ((i = 1; i <= warm_runs; i++)); do
    run "$name.$i" "$@"
    times+=("$seconds $i")
  done
  read -r seconds i < <(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((warm_runs + 1) / 2))p")
  cp "$logs/$name.$i.log" "$logs/$name.log"
  cp "$logs/$name.$i.xml" "$logs/$name.xml"
  rm -f "$logs/$name".[0-9]*.*
}
warm warm_transform "$bin/test_mdspan_transform" --cubby_require_warm; warm_t="$seconds"
warm warm_reuse "$bin/test_mdspan_reuse" --cubby_require_warm; warm_r="$seconds"
# Reference only (not a no-compile baseline): GoogleTest's "(N ms total)" of the 2nd iteration of
# --gtest_repeat=2, when every module is already loaded and the context exists.
run repeat_transform "$bin/test_mdspan_transform" --gtest_repeat=2 --cubby_require_warm
steady_ms="$(grep -o 'ran. ([0-9]* ms total)' "$logs/repeat_transform.log" | tail -1 | grep -o '[0-9]*')"
warm_iteration_ms="$(grep -o 'ran. ([0-9]* ms total)' "$logs/warm_transform.log" | tail -1 | grep -o '[0-9]*')"

# What cubby added to each warm run, in ms.
calc() { awk "BEGIN { printf \"%.4f\", $1 }"; }
ms1() { awk "BEGIN { printf \"%.1f\", $1 }"; }
ms2() { awk "BEGIN { printf \"%.2f\", $1 }"; }
cubby_ms() { ms2 "$(attr "$1" cubby_lookup_ms) + $(attr "$1" cubby_miss_ms)"; }
lookups_t="$(cubby_ms warm_transform)"; lookups_r="$(cubby_ms warm_reuse)"
probe_t="$(attr warm_transform cubby_arch_probe_ms)"; probe_r="$(attr warm_reuse cubby_arch_probe_ms)"
count_t="$(attr warm_transform cubby_lookups)"; count_r="$(attr warm_reuse cubby_lookups)"

if grep -q '\[  SKIPPED \]' "$logs/cold_transform.log"; then
  scope="compile-only tests (no GPU here: launch tests skip)"
else
  scope="full suite (compile-only + launch tests)"
fi
tests_run="$(grep -o '^\[==========\] [0-9]* tests' "$logs/cold_transform.log" | tail -1 | grep -o '[0-9]*')"
summary_cold="$(grep '^\[cubby\]' "$logs/cold_transform.log" | tail -1)"
summary_warm="$(grep '^\[cubby\]' "$logs/warm_transform.log" | tail -1)"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.0fx", a / b; else print "-" }'; }
ratio2() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }
cold_all="$(calc "$cold_t + $cold_r")"
warm_all="$(calc "$warm_t + $warm_r")"
warm_ms_t="$(ms1 "$warm_t * 1000")"; warm_ms_r="$(ms1 "$warm_r * 1000")"; warm_ms_all="$(ms1 "$warm_all * 1000")"
lookups_all="$(ms2 "$lookups_t + $lookups_r")"; probe_all="$(ms2 "$probe_t + $probe_r")"
removed_t="$(ms1 "$warm_ms_t - $lookups_t")"; removed_r="$(ms1 "$warm_ms_r - $lookups_r")"
removed_all="$(ms1 "$warm_ms_all - $lookups_all")"
removed_probe_all="$(ms1 "$warm_ms_all - $lookups_all - $probe_all")"
goal="$(awk -v w="$warm_ms_all" -v r="$removed_all" 'BEGIN { print (r > 0 && w / r <= 1.10) ? "met" : "NOT met" }')"

cat <<TABLE
Example suite ($scope; $tests_run tests in test_mdspan_transform, 24 NVRTC programs, 336 kernels)
| binary | 1st run (cold) | warm run (median of $warm_runs) | speedup |
| --- | ---: | ---: | ---: |
| test_mdspan_transform | ${cold_t} s | ${warm_t} s | $(ratio "$cold_t" "$warm_t") |
| test_mdspan_reuse (1st run already warm) | ${cold_r} s | ${warm_r} s | - |
| whole suite | ${cold_all} s | ${warm_all} s | $(ratio "$cold_all" "$warm_all") |

Warm run vs the same suite with compilation removed (= warm run - time inside cubby's lookups)
| binary | warm run | of which cubby lookups | compilation removed | warm / removed (goal <= 1.10) |
| --- | ---: | ---: | ---: | ---: |
| test_mdspan_transform | ${warm_ms_t} ms | ${lookups_t} ms (${count_t} lookups) | ${removed_t} ms | $(ratio2 "$warm_ms_t" "$removed_t") |
| test_mdspan_reuse | ${warm_ms_r} ms | ${lookups_r} ms (${count_r} lookups) | ${removed_r} ms | $(ratio2 "$warm_ms_r" "$removed_r") |
| whole suite | ${warm_ms_all} ms | ${lookups_all} ms | ${removed_all} ms | $(ratio2 "$warm_ms_all" "$removed_all") (goal $goal) |
GPU probe for the default arch (cuInit + device query; a GPU suite does it anyway): ${probe_all} ms; counted as cubby's too, the whole suite's ratio is $(ratio2 "$warm_ms_all" "$removed_probe_all").
For reference only (not a no-compile baseline: no context creation, module loads or first launches): test_mdspan_transform's 2nd iteration of --gtest_repeat=2 took ${steady_ms} ms (GoogleTest's total), the warm run's only iteration ${warm_iteration_ms} ms.
cold: $summary_cold
warm: $summary_warm
TABLE

if [ -n "$out" ]; then
  mkdir -p "$out"
  cp "$logs"/*.log "$logs"/*.xml "$out/"
  cat >"$out/timing.json" <<JSON
{"scope": "$scope", "tests": ${tests_run:-0},
 "cold_s": {"test_mdspan_transform": $cold_t, "test_mdspan_reuse": $cold_r, "suite": $cold_all},
 "warm_s": {"test_mdspan_transform": $warm_t, "test_mdspan_reuse": $warm_r, "suite": $warm_all},
 "warm_cubby_lookup_ms": {"test_mdspan_transform": $lookups_t, "test_mdspan_reuse": $lookups_r, "suite": $lookups_all},
 "warm_arch_probe_ms": {"test_mdspan_transform": $probe_t, "test_mdspan_reuse": $probe_r, "suite": $probe_all},
 "compilation_removed_ms": {"test_mdspan_transform": $removed_t, "test_mdspan_reuse": $removed_r, "suite": $removed_all},
 "warm_over_removed": $(ratio2 "$warm_ms_all" "$removed_all" | sed 's/^-$/null/'),
 "warm_runs": $warm_runs,
 "reference_only": {"warm_iteration_ms": ${warm_iteration_ms:-0}, "steady_state_iteration_ms": ${steady_ms:-0}}}
JSON
fi
