# Finds the suites the whole-suite benchmark runs. Source it, then call
#   discover_suites ROOT BUILD_DIR
# (CUBBY_SUITE_GTEST_TIMED=1: the GoogleTest suite is timed elsewhere, by ci/suite-timing.sh)
# which fills SUITE_ARGS with whole_suite.py arguments: `--suite NAME=COMMAND` for each suite
# found, `--skip NAME=REASON` for each one that cannot run here.
#   gtest-examples: the example GoogleTest suite (executables under BUILD_DIR/tests/examples but
#                   test_cub_vendored_cccl, whose vendored-CCCL programs are a check of the key's
#                   scan, not part of the timed suite), or $CUBBY_SUITE_GTEST_CMD.
#   pytest-examples: a pytest suite using the cubby plugin (pytest_plugin/examples,
#                   pytest_plugin/tests, tests/examples/python), or $CUBBY_SUITE_PYTEST_CMD.

discover_suites() {
  local root="$1" build_dir="$2"
  SUITE_ARGS=()

  if [ "${CUBBY_SUITE_GTEST_TIMED:-0}" = 1 ]; then
    :  # timed by ci/suite-timing.sh instead
  elif [ -n "${CUBBY_SUITE_GTEST_CMD:-}" ]; then
    SUITE_ARGS+=(--suite "gtest-examples=$CUBBY_SUITE_GTEST_CMD")
  else
    local bins=()
    if [ -d "$build_dir/tests/examples" ]; then
      while IFS= read -r bin; do bins+=("$bin"); done < <(
        find "$build_dir/tests/examples" -path '*/CMakeFiles' -prune -o -path '*/vendored-cccl' -prune \
          -o -name test_cub_vendored_cccl -prune -o -type f -perm -u+x -print | sort)
    fi
    if [ ${#bins[@]} -gt 0 ]; then
      local command="set -e;"
      for bin in "${bins[@]}"; do command+=" '$bin' --gtest_brief=1;"; done
      SUITE_ARGS+=(--suite "gtest-examples=$command")
    else
      SUITE_ARGS+=(--skip "gtest-examples=no example GoogleTest suite built (expected executables under $build_dir/tests/examples; set CUBBY_SUITE_GTEST_CMD to time another)")
    fi
  fi

  if [ -n "${CUBBY_SUITE_PYTEST_CMD:-}" ]; then
    SUITE_ARGS+=(--suite "pytest-examples=$CUBBY_SUITE_PYTEST_CMD")
    return 0
  fi
  local dir="" candidate
  for candidate in pytest_plugin/examples tests/examples/python tests/python/examples bench/suite/pytest_mdspan; do
    if [ -d "$root/$candidate" ]; then dir="$candidate"; break; fi
  done
  if [ -z "$dir" ]; then
    SUITE_ARGS+=(--skip "pytest-examples=no pytest suite found (looked for pytest_plugin/examples, tests/examples/python, tests/python/examples, bench/suite/pytest_mdspan; set CUBBY_SUITE_PYTEST_CMD)")
    return 0
  fi
  local python=""
  for candidate in "${CUBBY_PYTHON:-}" /usr/bin/python3 python3; do
    if [ -n "$candidate" ] && "$candidate" -c 'import pytest' >/dev/null 2>&1; then python="$candidate"; break; fi
  done
  if [ -z "$python" ]; then
    SUITE_ARGS+=(--skip "pytest-examples=pytest is not installed (Debian: apt-get install python3-pytest)")
    return 0
  fi
  SUITE_ARGS+=(--suite "pytest-examples=cd '$root' && CUBBY_LIBRARY='$build_dir/core/libcubby.so' PYTHONPATH='$root/pytest_plugin/src'\${PYTHONPATH:+:\$PYTHONPATH} '$python' -m pytest -q -p no:cacheprovider -p cubby.plugin '$dir'")
}
