#!/usr/bin/env bash
# Whole directories of CuPy's own tests (the "dirs" set of bench/suite/cupy_files.txt, as CuPy
# ships them) under pytest-xdist, CuPy's own kernel cache against the cubby plugin, on a GPU
# machine, from an already-built tree:
#   ci/gpu/cupy-dirs.sh OUT_DIR [BUILD_DIR]     (BUILD_DIR: $CUBBY_BUILD_DIR, else build/gpu)
# For each directory: cubby cold, CuPy's own cold, cubby warm with --cubby-require-warm, CuPy's
# own warm, cubby warm again (each -n $CUBBY_GPU_XDIST, default 8; a fresh store and cache folder
# per directory), each bounded by $CUBBY_CUPY_DIR_SECONDS (default 110) so a stalled run is cut
# and recorded as such. The test files come from bench/suite/cupy_tests.sh ($CUBBY_CUPY_TESTS,
# default .carry-cupy: carry it). CUBBY_CUPY_DIRS (space-separated paths under it) overrides the
# list; CUBBY_CUPY_DESELECT (pytest --deselect ids, space-separated) is applied to both sides.
# -> OUT_DIR/cupy_dirs.txt: one line per run (directory, run, exit status, seconds, pytest's last
#    line and the plugin's cupy: line); OUT_DIR/cupy_dirs_logs.tgz: every run's log.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_step_start cupy-dirs.sh build/gpu "$@"
python="$(command -v python3 || echo /usr/bin/python3)"
export CUBBY_LIBRARY="$build_dir/core/libcubby.so" CUBBY_CLI="$build_dir/cli/cubby"
export PYTHONPATH="$root/pytest_plugin/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
unset CUBBY_DIR CUBBY_DISABLE CUBBY_REQUIRE_WARM CUBBY_NO_CUPY CUBBY_STATS_FILE CUPY_CACHE_IN_MEMORY
unset PYTHONDONTWRITEBYTECODE  # as pip install leaves it: compiled bytecode
[ -f "$CUBBY_LIBRARY" ] || { echo "no $CUBBY_LIBRARY: build cubby first" >&2; exit 2; }
tests="${CUBBY_CUPY_TESTS:-$root/.carry-cupy}"
[ -d "$tests/tests" ] ||
  { echo "no CuPy test files in $tests: run bench/suite/cupy_tests.sh on the build machine and carry its folder" >&2; exit 2; }
dirs=()
if [ -n "${CUBBY_CUPY_DIRS:-}" ]; then
  read -ra dirs <<<"$CUBBY_CUPY_DIRS"
else
  while read -r set path _; do
    [ "$set" = dirs ] && dirs+=("$path")
  done <"$root/bench/suite/cupy_files.txt"
fi
deselect=()
for id in ${CUBBY_CUPY_DESELECT:-}; do deselect+=(--deselect "$id"); done
seconds="${CUBBY_CUPY_DIR_SECONDS:-110}"
xdist=(-n "${CUBBY_GPU_XDIST:-8}")
logs="$(mktemp -d /tmp/cubby-cupy-dirs.XXXXXX)"
trap 'rm -rf "$logs" /tmp/cubby-cupy-dirs-store.* /tmp/cubby-cupy-dirs-own.*' EXIT
{ nvidia-smi -L; cat "$tests/SOURCE"; "$python" -c 'import cupy; print("cupy", cupy.__version__)'; } \
  >"$out/cupy_dirs.txt" 2>&1
# run NAME ENV... -- ARGS...: one pytest session, bounded, logged, summed up in one line.
run() {
  local name="$1"; shift
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  local started=$SECONDS status
  (cd "$tests" && env "${env[@]}" timeout "$seconds" "$python" -m pytest -q -p no:cacheprovider \
      "${xdist[@]}" "$@" "${deselect[@]}") >"$logs/$name.log" 2>&1
  status=$?
  [ "$status" = 124 ] && status="cut at ${seconds} s"
  printf '%s | exit %s | %d s | %s\n' "$name" "$status" "$((SECONDS - started))" \
    "$(grep -E '^cupy:|passed|failed|error' "$logs/$name.log" | tail -n 2 | tr '\n' ' ')" >>"$out/cupy_dirs.txt"
  tar -czf "$out/cupy_dirs_logs.tgz" -C "$logs" .
}
for dir in "${dirs[@]}"; do
  name="$(basename "$dir")"
  store="$(mktemp -d /tmp/cubby-cupy-dirs-store.XXXXXX)"
  own="$(mktemp -d /tmp/cubby-cupy-dirs-own.XXXXXX)"
  plugin=(-p cubby.plugin --cubby-dir "$store")
  run "$name-cubby-cold" -- "${plugin[@]}" "$dir"
  run "$name-own-cold" "CUPY_CACHE_DIR=$own" -- "$dir"
  run "$name-cubby-warm" -- "${plugin[@]}" --cubby-require-warm "$dir"
  run "$name-own-warm" "CUPY_CACHE_DIR=$own" -- "$dir"
  run "$name-cubby-warm2" -- "${plugin[@]}" --cubby-require-warm "$dir"
done
cat "$out/cupy_dirs.txt"
exit $status
