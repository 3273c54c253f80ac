#!/usr/bin/env bash
# Builds cubby (warnings are errors) and runs every test. Installs the Debian packages it needs.
# GPU tests skip with a reason on machines without a GPU.
#   ci/test.sh                  # everything
#   CUBBY_BUILD_DIR=build/x ci/test.sh
#   CTEST_ARGS="-R Cache" ci/test.sh
#   CUBBY_CI_TEST_JOBS=4 ci/test.sh   # tests ctest runs at once (default: one per core)
#   CUBBY_CI_SANITIZE=0 CUBBY_CI_FUZZ=0 ci/test.sh   # without the sanitizer tests / fuzz runs
#   CUBBY_CI_LINT=0 ci/test.sh  # without clang-tidy / clang-format (ci/lint.sh)
#   CUBBY_CI_OVERLAP=0 ci/test.sh  # lint and the sanitizer build before the tests, not beside them
#   CUBBY_CI_WHEEL_ONE_STEP=0 ci/test.sh  # without the one-step `pip install ./pytest_plugin`
#                               # test (its own build of libcubby and the tool, unoptimised here)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Each stage logs its wall and CPU minutes when it ends; the table and the total come at the end,
# also when a stage fails.
trap stages_report EXIT

stage "packages"
source "$CUBBY_ROOT/ci/store-checks.sh"  # sanitizer_* and fuzz_* (store reliability)
# One apt-get install for everything this run needs (the package index is updated once).
packages=("${CUBBY_APT_PACKAGES[@]}" "${CUBBY_BENCH_APT_PACKAGES[@]}" "${CUBBY_PYTHON_APT_PACKAGES[@]}")
[ "${CUBBY_CI_LINT:-1}" = 0 ] || packages+=("${CUBBY_LINT_APT_PACKAGES[@]}")
[ "${CUBBY_CI_SANITIZE:-1}${CUBBY_CI_FUZZ:-1}" = 00 ] || packages+=("${CUBBY_SANITIZER_APT_PACKAGES[@]}")
apt_install "${packages[@]}"
ensure_node || true  # the dashboard tests are skipped, with the reason, without node/npm
find_cuda

build_dir="${CUBBY_BUILD_DIR:-$CUBBY_ROOT/build/ci}"
mkdir -p "$(dirname "$build_dir")"
stage "build"
# RelWithDebInfo's -O2 with line tables only (-g1): the same code and warnings, backtraces with
# file and line, a quarter less compile time than full debug information (-g).
configure_and_build "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUBBY_WERROR=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"

# CPU work that needs no test result runs in the background at the lowest priority while the
# tests run: the sanitizer build (clang: the sanitizer tests and the fuzz targets; its tests run
# as soon as it is done), then lint (clang-tidy over the build's compile_commands.json,
# clang-format over the sources). Most test time is spent waiting (servers, deadlines, child
# processes), so these fill the idle cores; at nice 19 they take next to no CPU from a test that
# wants it. CUBBY_CI_OVERLAP=0 runs them in the foreground, one after another, before the tests.
background_dir="$(mktemp -d /tmp/cubby-ci-background.XXXXXX)"
# background_step NAME COMMAND...: runs COMMAND with its output in $background_dir/NAME.log,
# notes its wall and CPU minutes (a line in $background_dir/times: the stage table counts the
# background steps' CPU together, in the stage that waits for them), a failure in
# $background_dir/failed, then creates NAME.done.
background_step() {
  local name="$1" started=$SECONDS cpu_before
  shift
  ci_cpu_now  # this (background) shell's finished children
  cpu_before="$ci_cpu"
  ( "$@" ) >"$background_dir/$name.log" 2>&1 || echo "$name" >>"$background_dir/failed"
  ci_cpu_now
  awk -v n="$name" -v w=$((SECONDS - started)) -v c=$((ci_cpu - cpu_before)) \
    'BEGIN { printf "%-16s %6.1f min wall %6.1f min CPU\n", n, w / 60, c / 6000 }' \
    >>"$background_dir/times"
  touch "$background_dir/$name.done"
}
background_steps() {
  background_step sanitizer-build sanitizer_build "$build_dir"
  [ "${CUBBY_CI_LINT:-1}" = 0 ] || background_step lint "$CUBBY_ROOT/ci/lint.sh" "$build_dir"
}
# background_failed NAME: when step NAME failed, shows its log and stops.
background_failed() {
  grep -qx "$1" "$background_dir/failed" 2>/dev/null || return 0
  if [ "$1" = lint ]; then cat "$background_dir/$1.log" >&2; else tail -n 80 "$background_dir/$1.log" >&2; fi
  case "$1" in
    lint) die "lint failed (above; ci/lint.sh reruns it, CUBBY_CI_LINT=0 skips it)" ;;
    *) die "the $1 step failed (output above; whole log: $background_dir/$1.log)" ;;
  esac
}
# background_await NAME: waits until background step NAME is done (or the steps ended).
background_await() {
  while [ ! -e "$background_dir/$1.done" ] && kill -0 "$background_pid" 2>/dev/null; do
    sleep 2
  done
  background_failed "$1"
}
# background_wait: waits for background_steps, shows lint's findings, the wall minutes of each
# step, and stops when one failed.
background_wait() {
  wait "$background_pid" || true
  background_pid=""
  log "background steps, wall and CPU minutes each (beside the tests):"
  sed 's/^/  /' "$background_dir/times" >&2 || true
  local name
  for name in sanitizer-build lint; do background_failed "$name"; done
}
background_pid=""
# stop_background: ends the background steps (their process group) if they still run.
stop_background() {
  [ -n "$background_pid" ] && kill -0 "$background_pid" 2>/dev/null || return 0
  kill -TERM -- "-$background_pid" 2>/dev/null || true
}
trap 'stop_background; stages_report' EXIT
if [ "${CUBBY_CI_OVERLAP:-1}" = 1 ]; then
  log "in the background (nice 19): the sanitizer build, then lint (logs: $background_dir)"
  # Its own process group (set -m), so that a failing test run ends it too (the EXIT trap).
  set -m
  ( renice -n 19 -p "$BASHPID" >/dev/null; background_steps ) </dev/null &
  background_pid=$!
  set +m
else
  stage "sanitizer build + lint"
  background_steps &
  background_pid=$!
  background_wait
fi

stage "C++ tests (ctest) beside the Python tests (pytest)"
# A private store for the tests: never the user's own.
export CUBBY_DIR="$(mktemp -d /tmp/cubby-ci-store.XXXXXX)"
trap 'rm -rf "$CUBBY_DIR" || true; stop_test_redis; stop_background; stages_report' EXIT
# The remote tier's tests run against real Redis (see start_test_redis in ci/lib.sh).
start_test_redis

# The Python tests run beside ctest (both mostly wait), their output in a log shown afterwards.
# Against the libcubby and CLI just built; the system interpreter has the Debian pytest packages.
# test_wheel.py installs the wheel into a fresh venv twice: from this build, and in one step as a
# user does (its own build in the test's cache folder, with ccache when it is on PATH). That build
# is CMake's build type None here (CMAKE_BUILD_TYPE through CUBBY_TEST_WHEEL_BUILD_TYPE): the same
# configure, build, install and wheel as a user's Release build, without optimisation (a third
# less CPU; the main build above already compiles the library optimised, -DNDEBUG).
# run_pytest: exit status 5 (nothing collected: no Python tests in this checkout) is not a failure.
python=/usr/bin/python3
pytest_log="$background_dir/pytest.log"
log "running the Python tests (cubby package and pytest plugin; log: $pytest_log)"
(
  started=$SECONDS
  status=0
  CUBBY_TEST_WHEEL_ONE_STEP="${CUBBY_CI_WHEEL_ONE_STEP:-1}" CUBBY_TEST_WHEEL_BUILD_TYPE=None \
  CUBBY_LIBRARY="$build_dir/core/libcubby.so" CUBBY_CLI="$build_dir/cli/cubby" \
    run_pytest "$CUBBY_ROOT/tests/python" -q -rs -p no:cacheprovider --durations=5 || status=$?
  echo "pytest took $(((SECONDS - started) / 60)).$(((SECONDS - started) % 60 / 6)) min (wall)"
  exit "$status"
) >"$pytest_log" 2>&1 &
pytest_pid=$!

log "running the C++ tests"
ctest_status=0
# shellcheck disable=SC2086
ctest --test-dir "$build_dir" --output-on-failure -j "$(ctest_jobs)" ${CTEST_ARGS:-} || ctest_status=$?
ctest_slowest "$build_dir"
log "ctest done; waiting for the Python tests"
pytest_status=0
wait "$pytest_pid" || pytest_status=$?
log "the Python tests (cubby package and pytest plugin):"
cat "$pytest_log" >&2
[ "$ctest_status" -eq 0 ] || die "C++ tests failed (output above)"
[ "$pytest_status" -eq 0 ] || die "the Python tests failed (output above)"

stage "dashboard browser test"
# The benchmark dashboard in a real browser (headless Chromium): built from the committed history.
source "$CUBBY_ROOT/bench/dashboard/dashboard.sh"
dashboard_out="$CUBBY_ROOT/bench/out/ci"
mkdir -p "$dashboard_out"
if dashboard_build "$CUBBY_ROOT/bench/results/history.jsonl" "$dashboard_out/dashboard.html"; then
  log "browser test of the dashboard (screenshot: $dashboard_out/dashboard.png)"
  dashboard_browser_test "$dashboard_out/dashboard.html" "$dashboard_out/dashboard.png" \
    || die "the dashboard browser test failed (output above)"
else
  log "skipped: the dashboard browser test (no node/npm packages; see above)"
fi
# Store reliability: the C++ suite under ASan + UBSan (while lint goes on in the background), and
# bounded libFuzzer runs.
if [ -n "$background_pid" ]; then
  stage "waiting for the sanitizer build"
  background_await sanitizer-build
fi
stage "sanitizer tests"
sanitizer_run "$build_dir"
if [ -n "$background_pid" ]; then
  stage "waiting for lint"
  background_wait
fi
stage "fuzz runs"
fuzz_run "$build_dir"

log "all tests passed"
