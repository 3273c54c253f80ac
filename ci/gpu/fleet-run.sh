#!/usr/bin/env bash
# The example suite's fleet simulation per remote backend (ci/fleet-suite.sh: redis, rediss, unix,
# cluster, http, https) on a GPU machine without those servers or a network, from an already-built
# tree and the servers ci/gpu/carry_servers.sh collected on the build machine:
#   ci/gpu/fleet-run.sh OUT_DIR [BUILD_DIR] [SERVERS] [RUNS]
# BUILD_DIR: $CUBBY_BUILD_DIR, else build/gpu (targets test_mdspan_transform and cubby built; the
# libraries the build machine had and this one lacks on LD_LIBRARY_PATH, e.g. ci/gpu/carry.sh's).
# SERVERS: the bundle (default .carry/servers); its env.sh is sourced. RUNS: fleet-suite.sh's
# (default 5). The run is bounded by CUBBY_GPU_STEP_SECONDS (default 540; fleet-suite.sh stops its
# servers when it is stopped). Writes OUT_DIR/fleet_suite.{json,md} and OUT_DIR/fleet_suite.log
# (the per-backend lines, there too when time ran out). Exit status: fleet-suite.sh's (1: a check
# or the goal failed, 124: time ran out), 2 when something it needs is missing.
set -uo pipefail
# shellcheck source=ci/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_step_start fleet-run.sh build/gpu "$@"
servers="${3:-$root/.carry/servers}" runs="${4:-5}" limit="${CUBBY_GPU_STEP_SECONDS:-540}"
suite="$build_dir/tests/examples/test_mdspan_transform" cubby="$build_dir/cli/cubby"
missing() { echo "ci/gpu/fleet-run.sh: $*" | tee "$out/fleet_suite.log" >&2; exit 2; }

[ -f "$servers/env.sh" ] || missing "no $servers/env.sh: run ci/gpu/carry_servers.sh $servers on the build machine and carry it"
# shellcheck disable=SC1091  # made by ci/gpu/carry_servers.sh
source "$servers/env.sh"
if [ ! -x "$suite" ] || [ ! -x "$cubby" ]; then
  missing "no $suite or $cubby: build the targets test_mdspan_transform and cubby"
fi
"$cubby" --version >/dev/null 2>&1 ||
  missing "$cubby does not run ($("$cubby" --version 2>&1 | tail -n 1)): put the build's libraries on LD_LIBRARY_PATH (ci/gpu/carry.sh)"
command -v python3 >/dev/null || [ -x /usr/bin/python3 ] || missing "no python3 on PATH"

timeout "$limit" "$root/ci/fleet-suite.sh" "$suite" "$cubby" "$out" "$runs" 2>&1 | tee "$out/fleet_suite.log"
exit "${PIPESTATUS[0]}"
