#!/usr/bin/env bash
# Whole-suite wall time of the example GoogleTest suite (tests/examples), first run on an empty
# cubby store (cold) vs second run (warm), printed as a Markdown table. On a machine without a
# GPU the launch tests skip, so this times the compile-only tests; on a GPU machine, the full
# suite. Also times the warm suite with compilation removed entirely: the second iteration of
# --gtest_repeat=2 in one process (every program already in memory and loaded).
#   ci/suite-timing.sh [BUILD_DIR [OUT_DIR]]      BUILD_DIR default build/ci (already built)
# OUT_DIR (optional) receives each run's log and timing.json.
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
unset CUBBY_REQUIRE_WARM GTEST_FILTER GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX

now() { date +%s.%N; }
# run NAME EXE [ARGS...]: runs a suite binary, records its wall seconds in $seconds.
run() {
  local name="$1"; shift
  local start end
  start="$(now)"
  "$@" >"$logs/$name.log" 2>&1 || { cat "$logs/$name.log" >&2; echo "error: $name failed" >&2; exit 1; }
  end="$(now)"
  seconds="$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')"
}

run cold_transform "$bin/test_mdspan_transform"; cold_t="$seconds"
run cold_reuse "$bin/test_mdspan_reuse" --cubby_require_warm; cold_r="$seconds"
run warm_transform "$bin/test_mdspan_transform" --cubby_require_warm; warm_t="$seconds"
run warm_reuse "$bin/test_mdspan_reuse" --cubby_require_warm; warm_r="$seconds"
run repeat_transform "$bin/test_mdspan_transform" --gtest_repeat=2 --cubby_require_warm
# GoogleTest's "(N ms total)" of the 2nd iteration: the suite with no compile, no load.
no_compile_ms="$(grep -o 'ran. ([0-9]* ms total)' "$logs/repeat_transform.log" | tail -1 | grep -o '[0-9]*')"
warm_iteration_ms="$(grep -o 'ran. ([0-9]* ms total)' "$logs/warm_transform.log" | tail -1 | grep -o '[0-9]*')"

if grep -q '\[  SKIPPED \]' "$logs/cold_transform.log"; then
  scope="compile-only tests (no GPU here: launch tests skip)"
else
  scope="full suite (compile-only + launch tests)"
fi
tests_run="$(grep -o '^\[==========\] [0-9]* tests' "$logs/cold_transform.log" | tail -1 | grep -o '[0-9]*')"
summary_cold="$(grep '^\[cubby\]' "$logs/cold_transform.log" | tail -1)"
summary_warm="$(grep '^\[cubby\]' "$logs/warm_transform.log" | tail -1)"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.0fx", a / b; else print "-" }'; }
total() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a + b }'; }
cold_all="$(total "$cold_t" "$cold_r")"
warm_all="$(total "$warm_t" "$warm_r")"

cat <<TABLE
Example suite ($scope; $tests_run tests in test_mdspan_transform, 24 NVRTC programs, 336 kernels)
| binary | 1st run (cold) | 2nd run (warm) | speedup |
| --- | ---: | ---: | ---: |
| test_mdspan_transform | ${cold_t} s | ${warm_t} s | $(ratio "$cold_t" "$warm_t") |
| test_mdspan_reuse (1st run already warm) | ${cold_r} s | ${warm_r} s | - |
| whole suite | ${cold_all} s | ${warm_all} s | $(ratio "$cold_all" "$warm_all") |
test_mdspan_transform, GoogleTest's own total: warm iteration ${warm_iteration_ms} ms; with compilation removed entirely (2nd iteration of --gtest_repeat=2) ${no_compile_ms} ms
cold: $summary_cold
warm: $summary_warm
TABLE

if [ -n "$out" ]; then
  mkdir -p "$out"
  cp "$logs"/*.log "$out/"
  cat >"$out/timing.json" <<JSON
{"scope": "$scope", "tests": ${tests_run:-0},
 "cold_s": {"test_mdspan_transform": $cold_t, "test_mdspan_reuse": $cold_r, "suite": $cold_all},
 "warm_s": {"test_mdspan_transform": $warm_t, "test_mdspan_reuse": $warm_r, "suite": $warm_all},
 "warm_iteration_ms": ${warm_iteration_ms:-0}, "no_compile_iteration_ms": ${no_compile_ms:-0}}
JSON
fi
