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
#
# Fleet simulation (the remote tier's goal: a fresh runner's first run, served by Redis, within
# 1.5x of a local warm run and >= 100x faster than cold). A private redis-server
# ($CUBBY_TEST_REDIS_SERVER, else redis-server on PATH; no redis-cli needed) on 127.0.0.1 is
# CUBBY_REMOTE for every run: the cold runs publish what they compile to it; the warm runs are
# disk hits that never ask it (checked). Then test_mdspan_transform runs with
# --cubby_require_warm in a brand-new empty store folder (fleet first run: every program must be
# a remote hit, checked in its XML report) and again in that folder (fleet second run: every
# program must be a disk hit, i.e. the first run's backfill landed). A failed check is printed
# after the tables and in timing.json (fleet_problems), and the script exits 1. Without a
# redis-server the fleet part is skipped with the reason (fleet_skipped) and its fields are null.
#
# The fleet runs prefetch nothing (CUBBY_PREFETCH=0): with a remote, a fresh store's prefetch
# fetches the suite's recipes and entries from it too, and these runs measure the remote tier.
#
# Each warm, fleet first and fleet second figure is the run of median wall time among
# CUBBY_TIMING_WARM_RUNS (default 5) runs.
#   ci/suite-timing.sh [BUILD_DIR [OUT_DIR]]      BUILD_DIR default build/ci (already built)
# OUT_DIR (optional) receives each run's log and XML report, and timing.json.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/ci/lib.sh"  # find_redis_server, start_redis, stop_redis
build_dir="${1:-$root/build/ci}"
out="${2:-}"
bin="$build_dir/tests/examples"
for exe in test_mdspan_transform test_mdspan_reuse; do
  [ -x "$bin/$exe" ] || { echo "error: $bin/$exe not found; build the tree first (ci/test.sh, or cmake --build $build_dir --target $exe)" >&2; exit 1; }
done
logs="$(mktemp -d /tmp/cubby-suite-timing.XXXXXX)"
store="$logs/store"
trap 'stop_redis "$logs/redis"; rm -rf "$logs"' EXIT
export CUBBY_DIR="$store"
unset CUBBY_REQUIRE_WARM GTEST_FILTER GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX GTEST_OUTPUT
# The only remote is the private one below: a shared Redis would serve the cold run.
unset CUBBY_REMOTE CUBBY_REMOTE_MODE CUBBY_REMOTE_SECRET CUBBY_READ_ONLY CUBBY_DISABLE

# The fleet simulation's Redis; without one, fleet_skip says why.
fleet_skip=""
if find_redis_server && mkdir -p "$logs/redis" && start_redis "$redis_server" "$logs/redis"; then
  export CUBBY_REMOTE="$redis_url"
else
  fleet_skip="$redis_why"
fi

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
  value="$(sed -n "s/.*<testsuites [^>]* $2=\"\([0-9.]*\)\".*/\1/p" "$logs/$1.xml" | awk 'NR == 1')"
  [ -n "$value" ] || { echo "error: no $2 in $logs/$1.xml; is the harness built from this tree?" >&2; exit 1; }
  echo "$value"
}
# check_tiers NAME KIND [PROGRAMS]: checks what served the run NAME, from its XML report and
# its [cubby] line; a failed check is added to $problems (reported after the tables; the script
# then exits 1) and the run's log and report are kept as failed-NAME.*. KIND local: no remote
# hit and the remote never asked (a warm store); remote: all PROGRAMS remote hits (a fresh
# store); disk: all PROGRAMS disk hits and the remote never asked (that store's second run).
problems=()
check_tiers() {
  local name="$1" kind="$2" programs="${3:-}" line remote disk compiles asked=no want=""
  line="$(grep '^\[cubby\]' "$logs/$name.log" | tail -1)"
  # Asked = remote lookups ("remote: HITS/LOOKUPS hits"); a write (the suite's recipes) is not.
  if [[ "$line" =~ remote:\ [0-9]+/([0-9]+)\ hits ]] && [ "${BASH_REMATCH[1]}" != 0 ]; then
    asked=yes
  fi
  remote="$(attr "$name" cubby_hits_remote)"; disk="$(attr "$name" cubby_hits_disk)"
  compiles="$(attr "$name" cubby_compiles)"
  case "$kind:$remote:$disk:$compiles:$asked" in
    local:0:*:*:no | "remote:$programs:0:0:"* | "disk:0:$programs:0:no") return 0 ;;
    local:*) want="a warm store's run must be served by its disk without asking the remote" ;;
    remote:*) want="a fresh store's first run must be $programs remote hits, no disk hit, no compile"
      want+=" (did the cold run publish every program to $CUBBY_REMOTE?)" ;;
    disk:*) want="that store's second run must be $programs disk hits without asking the remote"
      want+=" (did the first run's backfill land? a process must destroy its cubby::Cache, which"
      want+=" waits for its backfills, before it exits)" ;;
  esac
  cp "$logs/$name.log" "$logs/failed-$name.log"; cp "$logs/$name.xml" "$logs/failed-$name.xml"
  problems+=("$name: $want; got $remote remote hits, $disk disk hits, $compiles compiles: $line")
}

run cold_transform "$bin/test_mdspan_transform"; cold_t="$seconds"
run cold_reuse "$bin/test_mdspan_reuse" --cubby_require_warm; cold_r="$seconds"
if [ -z "$fleet_skip" ]; then check_tiers cold_reuse local; fi
warm_runs="${CUBBY_TIMING_WARM_RUNS:-5}"
# median NAME "SECONDS I"...: of the runs NAME.I, the one of median wall time becomes NAME (its
# log, its XML report, $seconds), so that its lookup time comes from the same run.
median() {
  local name="$1" i; shift
  read -r seconds i < <(printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p")
  cp "$logs/$name.$i.log" "$logs/$name.log"
  cp "$logs/$name.$i.xml" "$logs/$name.xml"
  rm -f "$logs/$name".[0-9]*.*
}
# warm NAME EXE [ARGS...]: $warm_runs warm runs (each checked served by disk, not the remote);
# the median one becomes NAME.
warm() {
  local name="$1"; shift
  local i times=()
  for ((i = 1; i <= warm_runs; i++)); do
    run "$name.$i" "$@"
    if [ -z "$fleet_skip" ]; then check_tiers "$name.$i" local; fi
    times+=("$seconds $i")
  done
  median "$name" "${times[@]}"
}
warm warm_transform "$bin/test_mdspan_transform" --cubby_require_warm; warm_t="$seconds"
warm warm_reuse "$bin/test_mdspan_reuse" --cubby_require_warm; warm_r="$seconds"
# Reference only (not a no-compile baseline): GoogleTest's "(N ms total)" of the 2nd iteration of
# --gtest_repeat=2, when every module is already loaded and the context exists.
run repeat_transform "$bin/test_mdspan_transform" --gtest_repeat=2 --cubby_require_warm
steady_ms="$(grep -o 'ran. ([0-9]* ms total)' "$logs/repeat_transform.log" | tail -1 | grep -o '[0-9]*')"
warm_iteration_ms="$(grep -o 'ran. ([0-9]* ms total)' "$logs/warm_transform.log" | tail -1 | grep -o '[0-9]*')"

# The fleet simulation, $warm_runs times: a brand-new store folder's first run (served by the
# remote the cold runs published to), then its second run; the median of each kind is kept.
if [ -z "$fleet_skip" ]; then
  programs="$(attr cold_transform cubby_compiles)"
  first_times=() second_times=()
  for ((i = 1; i <= warm_runs; i++)); do
    CUBBY_PREFETCH=0 CUBBY_DIR="$logs/fleet-store.$i" run "fleet_first.$i" "$bin/test_mdspan_transform" --cubby_require_warm
    check_tiers "fleet_first.$i" remote "$programs"
    first_times+=("$seconds $i")
    CUBBY_PREFETCH=0 CUBBY_DIR="$logs/fleet-store.$i" run "fleet_second.$i" "$bin/test_mdspan_transform" --cubby_require_warm
    check_tiers "fleet_second.$i" disk "$programs"
    second_times+=("$seconds $i")
    rm -rf "$logs/fleet-store.$i"
  done
  median fleet_first "${first_times[@]}"; fleet_t="$seconds"
  median fleet_second "${second_times[@]}"; fleet2_t="$seconds"
  fleet_hits="$(attr fleet_first cubby_hits_remote)"
fi

# The cold paths (no remote: it holds every entry by now): test_mdspan_transform on an empty
# store without PCH (CUBBY_PCH=0: how cubby compiled before PCH; it records the suite's recipes),
# then, its entries removed and its recipes kept (what a header edit or a toolchain upgrade does
# to the keys), again with prefetch (the default): worker processes compile the recorded programs
# while the tests run.
edit_store="$logs/edit-store"
run cold_nopch env -u CUBBY_REMOTE CUBBY_DIR="$edit_store" CUBBY_PCH=0 "$bin/test_mdspan_transform"
cold_nopch_t="$seconds"
rm -rf "$edit_store/entries"
run edited env -u CUBBY_REMOTE CUBBY_DIR="$edit_store" "$bin/test_mdspan_transform"; edited_t="$seconds"
edited_summary="$(grep '^\[cubby\]' "$logs/edited.log" | tail -1)"
rm -rf "$edit_store"

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

# The fleet simulation's table; ratios as the goals state them.
goal_status() { awk -v v="$1" -v t="$3" "BEGIN { print (v $2 t) ? \"met\" : \"NOT met\" }"; }
pch_gain="$(awk -v a="$cold_nopch_t" -v b="$cold_t" 'BEGIN { printf "%.2f", a / b }')"
edit_gain="$(awk -v a="$cold_nopch_t" -v b="$edited_t" 'BEGIN { printf "%.2f", a / b }')"
cat <<TABLE

Cold paths of test_mdspan_transform (no remote)
| run | wall time | vs cold without PCH |
| --- | ---: | ---: |
| cold, empty store, CUBBY_PCH=0 | ${cold_nopch_t} s | 1.00x |
| cold, empty store, PCH (the 1st run above) | ${cold_t} s | ${pch_gain}x |
| after a header edit: no entry, recipes present, prefetch | ${edited_t} s | ${edit_gain}x |
after the edit: $edited_summary
TABLE
if [ -z "$fleet_skip" ]; then
  fleet_over_warm="$(ratio2 "$fleet_t" "$warm_t")"; fleet2_over_warm="$(ratio2 "$fleet2_t" "$warm_t")"
  cold_over_fleet="$(awk -v a="$cold_t" -v b="$fleet_t" 'BEGIN { printf "%.1f", a / b }')"
  cat <<TABLE

Fleet simulation: a second store folder whose first run is served by Redis ($CUBBY_REMOTE, filled by the cold run)
| test_mdspan_transform | wall time | vs local warm run (goal <= 1.5x) | vs cold (goal >= 100x) |
| --- | ---: | ---: | ---: |
| 1st run (cold, publishes to Redis) | ${cold_t} s | - | - |
| local warm run (median of $warm_runs) | ${warm_t} s | 1.000x | $(ratio "$cold_t" "$warm_t") faster |
| fleet first run: new empty store, served by Redis (median of $warm_runs) | ${fleet_t} s | ${fleet_over_warm}x ($(goal_status "$fleet_over_warm" "<=" 1.5)) | $(ratio "$cold_t" "$fleet_t") faster ($(goal_status "$cold_over_fleet" ">=" 100)) |
| fleet second run: same store, disk hits (median of $warm_runs) | ${fleet2_t} s | ${fleet2_over_warm}x | $(ratio "$cold_t" "$fleet2_t") faster |
fleet first run: $(grep '^\[cubby\]' "$logs/fleet_first.log" | tail -1)
fleet second run: $(grep '^\[cubby\]' "$logs/fleet_second.log" | tail -1)
TABLE
else
  echo
  echo "Fleet simulation skipped: $fleet_skip"
fi
for problem in ${problems[@]+"${problems[@]}"}; do echo "error: $problem" >&2; done

# json_string TEXT: TEXT as a JSON string (backslashes and quotes escaped, control characters
# dropped).
json_string() { printf '"%s"' "$(printf '%s' "$1" | tr -d '\000-\037' | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
problems_json=""
for problem in ${problems[@]+"${problems[@]}"}; do problems_json+="${problems_json:+, }$(json_string "$problem")"; done
if [ -z "$fleet_skip" ]; then
  fleet_json=" \"fleet_s\": {\"test_mdspan_transform\": $fleet_t}, \"fleet_second_s\": {\"test_mdspan_transform\": $fleet2_t},
 \"fleet_over_warm\": $fleet_over_warm, \"cold_over_fleet\": $cold_over_fleet, \"fleet_remote_hits\": $fleet_hits,
 \"fleet_runs\": $warm_runs, \"fleet_skipped\": null, \"fleet_problems\": [$problems_json]"
else
  fleet_json=" \"fleet_s\": null, \"fleet_second_s\": null, \"fleet_over_warm\": null, \"cold_over_fleet\": null,
 \"fleet_remote_hits\": null, \"fleet_runs\": null, \"fleet_skipped\": $(json_string "$fleet_skip"), \"fleet_problems\": null"
fi
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
 "cold_nopch_s": {"test_mdspan_transform": $cold_nopch_t}, "edited_s": {"test_mdspan_transform": $edited_t},
 "pch_gain": $pch_gain, "edit_gain": $edit_gain,
 "reference_only": {"warm_iteration_ms": ${warm_iteration_ms:-0}, "steady_state_iteration_ms": ${steady_ms:-0}},
$fleet_json}
JSON
fi
if [ ${#problems[@]} -gt 0 ]; then
  echo "error: ${#problems[@]} check(s) of what served the runs failed (above)${out:+; their logs are in $out/failed-*}" >&2
  exit 1
fi
