#!/usr/bin/env bash
# Fleet load of the remote tier (issue 26's load goal: 400 fresh-store processes, 8 at a time,
# against each backend: 0 errors; a cluster master killed -9 mid-load: 0 failed processes, every
# call within its deadline). Starts one server of each backend on loopback (ci/lib.sh:
# start_redis_fleet, start_nginx), runs bench/suite/fleet_load.py against redis, rediss, unix,
# cluster, http and https, then against two fresh clusters with a master killed with -9 once half
# the processes are done: cluster:kill loses a master that the URL does not name (the goal's case:
# misses for its slots only), cluster:kill-named loses the very node the URL names (a fresh
# process then has no node to read the slot map from: every lookup a miss, still no failure),
# and stops the servers. unix and https share their server with redis and http (one redis-server
# serves TCP and the socket, one nginx both ports), so they find everything already there.
#   ci/fleet-load.sh CUBBY OUT_DIR [N [P]]     N default 400, P default 8
# FLEET_LOAD_N_FOR="name=N ..." gives some backends another N (e.g. "rediss=100 https=100").
# OUT_DIR receives fleet_load.json and fleet_load.md. Exits 1 when a backend misses the goal.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/ci/lib.sh"  # start_redis_fleet, stop_redis_fleet, start_nginx, stop_nginx, find_python
cubby="$(realpath "${1:?usage: ci/fleet-load.sh CUBBY OUT_DIR [N [P]]}")"
out="${2:?usage: ci/fleet-load.sh CUBBY OUT_DIR [N [P]]}"
n="${3:-400}" p="${4:-8}"
servers="$(mktemp -d /tmp/cubby-fleet-load.XXXXXX)"
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  stop_redis_fleet "$servers/fleet" 2>/dev/null || true
  stop_redis_fleet "$servers/kill" 2>/dev/null || true
  stop_redis_fleet "$servers/kill-named" 2>/dev/null || true
  stop_nginx "$servers/nginx" 2>/dev/null || true
  rm -rf "$servers"
}
trap cleanup EXIT
unset CUBBY_REMOTE CUBBY_REMOTE_MODE CUBBY_READ_ONLY CUBBY_DISABLE CUBBY_REMOTE_SECRET
mkdir -p "$servers/fleet" "$servers/kill" "$servers/kill-named" "$servers/nginx"
start_redis_fleet "$servers/fleet" || die "$redis_why"
redis_backends="$CUBBY_BENCH_BACKENDS" redis_ca="$CUBBY_REMOTE_CA_FILE"
start_nginx "$servers/nginx" || die "$nginx_why"
# The kill cases get their own clusters: the load above leaves the first one whole.
start_redis_fleet "$servers/kill" || die "$redis_why"
kill_first="${CUBBY_BENCH_BACKENDS##*cluster=}"
start_redis_fleet "$servers/kill-named" || die "$redis_why"
named_first="${CUBBY_BENCH_BACKENDS##*cluster=}"

args=()
IFS=, read -r -a pairs <<<"$redis_backends"
for pair in "${pairs[@]}"; do args+=(--backend "$pair"); done
args+=(--backend "http=$nginx_url/cubby" --backend "https=$nginx_https_url/cubby")
args+=(--backend "cluster:kill=$kill_first" --kill "cluster:kill=$servers/kill/c2/redis.pid")
args+=(--backend "cluster:kill-named=$named_first")
args+=(--kill "cluster:kill-named=$servers/kill-named/c1/redis.pid")
args+=(--ca "rediss=$redis_ca" --ca "https=$nginx_ca")
for pair in ${FLEET_LOAD_N_FOR:-}; do args+=(--n-for "$pair"); done
log "fleet load: N=$n P=$p against ${redis_backends//,/ } http https cluster:kill cluster:kill-named"
find_python
"$python" "$root/bench/suite/fleet_load.py" --cubby "$cubby" --out "$out" --n "$n" \
  --parallel "$p" "${args[@]}"
