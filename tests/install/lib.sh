#!/usr/bin/env bash
# Shared by the tests/install scripts; source it, do not run it. Gives each script a private work
# folder ($work, removed at exit) with its own store (CUBBY_DIR), and:
#   step COMMAND...         runs COMMAND with its output in $work/log; on failure shows it and exits
#   fail MESSAGE            says what failed (with $work/log when there is one) and exits 1
#   compiled_then_hit NAME COMMAND...
#                           runs COMMAND (a consumer printing "KEY TIER LOWERED_NAME" for fill<int>)
#                           twice on the fresh store: the first run must compile, the second hit
#                           the disk tier with the same key
set -euo pipefail
work="$(mktemp -d "/tmp/cubby-$(basename "$0" .sh).XXXXXX")"
trap 'rm -rf "$work"' EXIT
unset CUBBY_REQUIRE_WARM CUBBY_DISABLE CUBBY_READ_ONLY CUBBY_REMOTE GTEST_FILTER GTEST_OUTPUT \
  GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX
export CUBBY_DIR="$work/store"

fail() {
  echo "error: $*"
  if [ -f "$work/log" ]; then cat "$work/log"; fi
  exit 1
}

step() { "$@" >"$work/log" 2>&1 || fail "'$*' failed (exit $?)"; }

compiled_then_hit() {
  local name="$1" first second
  shift
  rm -rf "$CUBBY_DIR"
  first="$("$@")" || fail "$name: '$*' failed"
  second="$("$@")" || fail "$name: '$*' failed the second time"
  echo "$name first:  $first"
  echo "$name second: $second"
  [[ "$first" == *" compiled _Z4fillIiEvPT_" ]] || fail "$name: the first run did not compile fill<int>"
  [[ "$second" == *" disk _Z4fillIiEvPT_" ]] || fail "$name: the second run was not a disk hit"
  [ "${first%% *}" = "${second%% *}" ] || fail "$name: the key differs between runs"
}
