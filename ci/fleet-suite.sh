#!/usr/bin/env bash
# The example suite's fleet simulation per remote backend (issue 26's goal: a fresh runner's
# first run, served by the remote, <= 1.5x the local warm run, through every backend). Starts one
# server of each backend on loopback (ci/lib.sh: start_redis_fleet, start_nginx). Local warm: the
# suite (test_mdspan_transform) runs once on an empty store without a remote (cold), then RUNS
# times on it (warm, disk hits; CUBBY_PREFETCH=0 like the fleet runs: a warm store's prefetch
# costs it ~10 ms here). Per backend (redis, rediss, unix, cluster, http, https): a first
# machine runs the suite on an empty store with CUBBY_REMOTE set (it compiles, or finds, and
# publishes every program), then RUNS fleet first runs, each on a brand-new empty store with
# CUBBY_PREFETCH=0 (as ci/suite-timing.sh), checked to be remote hits for every program; the
# entries its read-ahead fetched before the lookups took them (CUBBY_REMOTE_READ_AHEAD, on by
# default) are counted too.
# Each fleet first run is interleaved with a local warm run (the machine's load hits both
# alike); figures: the median wall time of the RUNS runs of each; ratio fleet first / local
# warm of the same backend's interleaved runs.
#   ci/fleet-suite.sh TEST_MDSPAN_TRANSFORM CUBBY OUT_DIR [RUNS]     RUNS default 5
# Every store (local and fleet) lives under a new folder in $TMPDIR (default /tmp): TMPDIR=/dev/shm
# puts them all on a tmpfs, away from the file system's own costs of creating files.
# OUT_DIR receives fleet_suite.json and fleet_suite.md. Exits 1 when a check or the goal fails.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/ci/lib.sh"  # start_redis_fleet, stop_redis_fleet, start_nginx, stop_nginx
usage="usage: ci/fleet-suite.sh TEST_MDSPAN_TRANSFORM CUBBY OUT_DIR [RUNS]"
suite="$(realpath "${1:?$usage}")" cubby="$(realpath "${2:?$usage}")" out="${3:?$usage}"
runs="${4:-5}"
work="$(mktemp -d "${TMPDIR:-/tmp}/cubby-fleet-suite.XXXXXX")"
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  stop_redis_fleet "$work/fleet" 2>/dev/null || true
  stop_nginx "$work/nginx" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
unset CUBBY_REMOTE CUBBY_REMOTE_MODE CUBBY_READ_ONLY CUBBY_DISABLE CUBBY_REMOTE_SECRET
unset CUBBY_REQUIRE_WARM GTEST_FILTER GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX GTEST_OUTPUT
mkdir -p "$work/fleet" "$work/nginx" "$out"
start_redis_fleet "$work/fleet" || die "$redis_why"
redis_ca="$CUBBY_REMOTE_CA_FILE"
start_nginx "$work/nginx" || die "$nginx_why"
unset CUBBY_REMOTE_CA_FILE

# timed STORE [VAR=VALUE...]: runs the suite on STORE with the settings given; sets seconds.
timed() {
  local store="$1" start end
  shift
  start="$(date +%s.%N)"
  env CUBBY_DIR="$store" "$@" "$suite" >"$work/last.log" 2>&1 \
    || { tail -n 20 "$work/last.log" >&2; die "the suite failed (store $store)"; }
  end="$(date +%s.%N)"
  seconds="$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')"
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
find_python
# counters STORE NAME...: the store's counters NAME..., on one line (one `cubby stats` for all).
counters() {
  local store="$1"
  shift
  "$cubby" stats --json --dir "$store" |
    "$python" -c "import json,sys; d=json.load(sys.stdin); print(*(d[n] for n in sys.argv[1:]))" "$@"
}

timed "$work/local"
cold="$seconds"
programs="$(counters "$work/local" compiles)"
warm_times=()
for ((i = 0; i < runs; i++)); do timed "$work/local" CUBBY_PREFETCH=0; warm_times+=("$seconds"); done
warm="$(median "${warm_times[@]}")"
log "local: cold $cold s, warm $warm s (median of $runs), $programs programs"

IFS=, read -r -a pairs <<<"$CUBBY_BENCH_BACKENDS"
pairs+=("http=$nginx_url/cubby" "https=$nginx_https_url/cubby")
rows="" json="" status=0
for pair in "${pairs[@]}"; do
  name="${pair%%=*}" url="${pair#*=}" ca=""
  case "$name" in rediss) ca="$redis_ca" ;; https) ca="$nginx_ca" ;; esac
  settings=(CUBBY_REMOTE="$url" ${ca:+CUBBY_REMOTE_CA_FILE="$ca"})
  timed "$work/first-machine-$name" "${settings[@]}"
  first_machine="$seconds"
  times=() problems="" local_times=() taken=()
  for ((i = 0; i < runs; i++)); do
    timed "$work/local" CUBBY_PREFETCH=0
    local_times+=("$seconds")
    timed "$work/fresh-$name-$i" "${settings[@]}" CUBBY_PREFETCH=0
    times+=("$seconds")
    read -r hits run_taken < <(counters "$work/fresh-$name-$i" hits_remote remote_read_ahead_taken)
    [ "$hits" = "$programs" ] || problems="run $i: $hits remote hits of $programs programs"
    taken+=("$run_taken")
    rm -rf "$work/fresh-$name-$i"
  done
  fleet="$(median "${times[@]}")" local_warm="$(median "${local_times[@]}")"
  ratio="$(awk -v a="$fleet" -v b="$local_warm" 'BEGIN { printf "%.2f", a / b }')"
  goal="$(awk -v r="$ratio" 'BEGIN { print (r <= 1.5 ? "met" : "not met") }')"
  [ -z "$problems" ] && [ "$goal" = met ] || status=1
  log "$name: fleet first run $fleet s = ${ratio}x warm ($goal) ${problems}"
  read_ahead="$(median "${taken[@]}")"
  rows+="| $name | $first_machine | $local_warm | $fleet | ${ratio}x | $read_ahead | $goal${problems:+: $problems} |"$'\n'
  json+="${json:+,}{\"backend\": \"$name\", \"first_machine_s\": $first_machine, \"fleet_first_s\": $fleet,"
  json+=" \"local_warm_s\": $local_warm, \"local_warm_runs_s\": [$(IFS=,; echo "${local_times[*]}")],"
  json+=" \"fleet_first_runs_s\": [$(IFS=,; echo "${times[*]}")], \"ratio\": $ratio,"
  json+=" \"read_ahead_taken\": [$(IFS=,; echo "${taken[*]}")],"
  json+=" \"status\": \"$goal\", \"problems\": \"$problems\"}"
done

{
  printf 'Local: cold %s s, warm %s s (median of %s), %s programs (test_mdspan_transform).\n' \
    "$cold" "$warm" "$runs" "$programs"
  printf 'Per backend: medians of %s local warm runs interleaved with %s fleet first runs.\n\n' "$runs" "$runs"
  printf '| backend | first machine s | local warm s | fleet first run s | / local warm | read ahead (median) | goal <= 1.5x |\n'
  printf '|---|---|---|---|---|---|---|\n%s' "$rows"
} | tee "$out/fleet_suite.md"
printf '{"command": "ci/fleet-suite.sh %s", "cold_s": %s, "warm_s": %s, "warm_runs_s": [%s], "programs": %s, "backends": [%s]}\n' \
  "$*" "$cold" "$warm" "$(IFS=,; echo "${warm_times[*]}")" "$programs" "$json" >"$out/fleet_suite.json"
exit "$status"
