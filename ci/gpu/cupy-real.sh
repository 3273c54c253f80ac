#!/usr/bin/env bash
# CuPy's own test files (bench/suite/cupy_files.txt, exactly as CuPy ships them) through the cubby
# plugin and through CuPy's own kernel cache, on a GPU machine, from an already-built tree:
#   ci/gpu/cupy-real.sh OUT_DIR [BUILD_DIR]      (BUILD_DIR: $CUBBY_BUILD_DIR, else build/gpu)
# The files come from bench/suite/cupy_tests.sh, run on the build machine (a pip-installed CuPy
# ships no tests): $CUBBY_CUPY_TESTS, default .carry-cupy in the repository (carry it there); where
# CuPy's repository is at hand and the folder is missing, it is extracted here.
# Runs bench/suite/cupy_suite.py on the sets $CUBBY_CUPY_SETS (default core) as one pytest
# session: --parts $CUBBY_CUPY_PARTS (default xdist,keys,alone: -n $CUBBY_GPU_XDIST (8) first,
# then the key derivation of test_mdspan.py's programs in a warm process, then alone; alone-warm
# instead of alone: $CUBBY_CUPY_WARM_REPEAT (5) warm runs each way alone, alternating, on the
# folder and store the -n N round filled; CUBBY_CUPY_WARM_CONTROL=1 adds an A/A row, cubby again,
# to read them against); each round
# runs both cold runs, then both warm ones (cubby's with --cubby-require-warm), then
# $CUBBY_CUPY_WARM_EXTRA (1) more alternating warm runs each way; $CUBBY_CUPY_REPEAT rounds (1).
# It stops cleanly $CUBBY_CUPY_SECONDS after it starts (default: CUBBY_GPU_STEP_SECONDS - 15,
# else 225), keeping what it measured.
# -> OUT_DIR/cupy_real.json (rows, goals, every run), cupy_real.txt (the verdict table), env.txt.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_step_start cupy-real.sh build/gpu "$@"
python="$(command -v python3 || echo /usr/bin/python3)"
export CUBBY_LIBRARY="$build_dir/core/libcubby.so" CUBBY_CLI="$build_dir/cli/cubby"
export PYTHONPATH="$root/pytest_plugin/src${PYTHONPATH:+:$PYTHONPATH}"
unset CUBBY_DIR CUBBY_DISABLE CUBBY_REQUIRE_WARM CUBBY_NO_CUPY CUBBY_STATS_FILE CUPY_CACHE_IN_MEMORY
[ -f "$CUBBY_LIBRARY" ] || { echo "no $CUBBY_LIBRARY: build cubby first" >&2; exit 2; }
tests="${CUBBY_CUPY_TESTS:-$root/.carry-cupy}"
if [ ! -d "$tests/tests" ]; then
  "$root/bench/suite/cupy_tests.sh" "$tests" ||
    { echo "no CuPy test files in $tests: run bench/suite/cupy_tests.sh on the build machine and carry its folder" >&2; exit 2; }
fi
sets="${CUBBY_CUPY_SETS:-core}"
suites=()
while read -r set path _; do
  case "$set" in ''|'#'*) continue ;; esac
  [[ ",$sets," == *",$set,"* ]] && suites+=(--suite "$tests/$path")
done <"$root/bench/suite/cupy_files.txt"
[ ${#suites[@]} -gt 0 ] || { echo "no files of the sets $sets in bench/suite/cupy_files.txt" >&2; exit 2; }
seconds="${CUBBY_CUPY_SECONDS:-$(( ${CUBBY_GPU_STEP_SECONDS:-240} - 15 ))}"
{ nvidia-smi -L; cat "$tests/SOURCE"
  "$python" -c 'import cupy, numpy, pytest; print("cupy", cupy.__version__, "numpy", numpy.__version__, "pytest", pytest.__version__)'
  echo "sets $sets; ${suites[*]}"; } >"$out/env.txt" 2>&1
control=(); [ "${CUBBY_CUPY_WARM_CONTROL:-0}" = 1 ] && control=(--warm-control)
work="$(mktemp -d /tmp/cubby-cupy-real.XXXXXX)"
trap 'rm -rf "$work"' EXIT
"$python" "$root/bench/suite/cupy_suite.py" --out "$out/cupy_real.json" --work "$work" \
  "${suites[@]}" --parts "${CUBBY_CUPY_PARTS:-xdist,keys,alone}" --runs cold,warm \
  --repeat "${CUBBY_CUPY_REPEAT:-1}" --warm-extra "${CUBBY_CUPY_WARM_EXTRA:-1}" \
  --warm-repeat "${CUBBY_CUPY_WARM_REPEAT:-5}" "${control[@]}" \
  --xdist "${CUBBY_GPU_XDIST:-8}" --key-file test_mdspan --deadline "$seconds" || status=1
exit $status
