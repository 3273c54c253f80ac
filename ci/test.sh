#!/usr/bin/env bash
# Builds cubby (warnings are errors) and runs every test. Installs the Debian packages it needs.
# GPU tests skip with a reason on machines without a GPU.
#   ci/test.sh                  # everything
#   CUBBY_BUILD_DIR=build/x ci/test.sh
#   CTEST_ARGS="-R Cache" ci/test.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

apt_install "${CUBBY_APT_PACKAGES[@]}"
find_cuda

build_dir="${CUBBY_BUILD_DIR:-$CUBBY_ROOT/build/ci}"
mkdir -p "$(dirname "$build_dir")"
configure_and_build "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUBBY_WERROR=ON

log "running the C++ tests"
# A private store for the tests: never the user's own.
export CUBBY_DIR="$(mktemp -d /tmp/cubby-ci-store.XXXXXX)"
trap 'rm -rf "$CUBBY_DIR"' EXIT
# shellcheck disable=SC2086
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" ${CTEST_ARGS:-}
log "all tests passed"
