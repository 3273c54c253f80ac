#!/usr/bin/env bash
# The install tests' fixture: installs BUILD_DIR into PREFIX (emptied first), once for all of the
# tests that build or run against an installed cubby (tests/CMakeLists.txt: fixture cubby_install).
#   tests/install/install.sh BUILD_DIR PREFIX
set -euo pipefail
build_dir="$1"
prefix="$2"
rm -rf "$prefix"
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
echo "installed $build_dir into $prefix"
