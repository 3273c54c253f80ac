#!/usr/bin/env bash
# Builds cubby (warnings are errors) and runs every test. Installs the Debian packages it needs.
# GPU tests skip with a reason on machines without a GPU.
#   ci/test.sh                  # everything
#   CUBBY_BUILD_DIR=build/x ci/test.sh
#   CTEST_ARGS="-R Cache" ci/test.sh
#   CUBBY_CI_SANITIZE=0 CUBBY_CI_FUZZ=0 ci/test.sh   # without the sanitizer build / fuzz runs
#   CUBBY_CI_LINT=0 ci/test.sh  # without clang-tidy / clang-format (ci/lint.sh)
#   CUBBY_CI_WHEEL_ONE_STEP=0 ci/test.sh  # without the one-step `pip install ./pytest_plugin`
#                               # test (a Release build of libcubby and the tool in build/wheel)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Each stage logs its wall and CPU minutes when it ends; the table and the total come at the end,
# also when a stage fails.
trap stages_report EXIT

stage "packages"
apt_install "${CUBBY_APT_PACKAGES[@]}" "${CUBBY_BENCH_APT_PACKAGES[@]}" "${CUBBY_PYTHON_APT_PACKAGES[@]}"
[ "${CUBBY_CI_LINT:-1}" = 0 ] || apt_install "${CUBBY_LINT_APT_PACKAGES[@]}"
ensure_node || true  # the dashboard tests are skipped, with the reason, without node/npm
find_cuda

build_dir="${CUBBY_BUILD_DIR:-$CUBBY_ROOT/build/ci}"
mkdir -p "$(dirname "$build_dir")"
stage "build"
configure_and_build "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUBBY_WERROR=ON

# clang-tidy over the build's compile_commands.json and clang-format over the sources.
if [ "${CUBBY_CI_LINT:-1}" = 1 ]; then
  stage "lint"
  log "lint: clang-tidy and clang-format (ci/lint.sh)"
  "$CUBBY_ROOT/ci/lint.sh" "$build_dir" || die "lint failed (above); CUBBY_CI_LINT=0 skips it"
else
  log "skipped: lint (CUBBY_CI_LINT=0)"
fi

stage "C++ tests (ctest)"
log "running the C++ tests"
# A private store for the tests: never the user's own.
export CUBBY_DIR="$(mktemp -d /tmp/cubby-ci-store.XXXXXX)"
trap 'rm -rf "$CUBBY_DIR" || true; stop_test_redis; stages_report' EXIT
# The remote tier's tests run against real Redis (see start_test_redis in ci/lib.sh).
start_test_redis
# shellcheck disable=SC2086
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" ${CTEST_ARGS:-}

stage "Python tests (pytest)"
log "running the Python tests (cubby package and pytest plugin)"
# Against the libcubby and CLI just built; the system interpreter has the Debian pytest packages.
# test_wheel.py installs the wheel into a fresh venv twice: from this build, and in one step as a
# user does (its own Release build in build/wheel, with ccache when it is on PATH).
# run_pytest: exit status 5 (nothing collected: no Python tests in this checkout) is not a failure.
python=/usr/bin/python3
CUBBY_TEST_WHEEL_ONE_STEP="${CUBBY_CI_WHEEL_ONE_STEP:-1}" \
CUBBY_LIBRARY="$build_dir/core/libcubby.so" CUBBY_CLI="$build_dir/cli/cubby" \
  run_pytest "$CUBBY_ROOT/tests/python" -q -rs -p no:cacheprovider --durations=5 \
  || die "the Python tests failed (output above)"

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
# Store reliability: the C++ suite under ASan + UBSan, and bounded libFuzzer runs.
source "$CUBBY_ROOT/ci/store-checks.sh"
stage "sanitizer build + tests"
sanitizer_tests "$build_dir"
stage "fuzz build + runs"
fuzz_runs "$build_dir"

log "all tests passed"
