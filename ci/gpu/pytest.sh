#!/usr/bin/env bash
# The pytest plugin on a GPU machine, from an already-built tree (no build, no network there).
#   ci/gpu/pytest.sh OUT_DIR [BUILD_DIR]      (BUILD_DIR: $CUBBY_BUILD_DIR, else build/gpu)
# 1. tests/python (plugin, API, CuPy adapter against the fake and, here, real CuPy) -> tests.log
# 2. the measurement (ci/gpu/pytest_measure.py): tests/python/gpu/test_cupy_mdspan.py (25 CuPy
#    RawModules, 350 mdspan instantiations, 100 tests) with CuPy's own cache and with the cubby
#    adapter, cold and warm, alone and with -n 8, alternating, medians; a fleet run (a fresh store
#    served by a private Redis, when a redis-server is found: $CUBBY_TEST_REDIS_SERVER or PATH);
#    export/import; the plugin's overhead on a session with no kernels.
#    -> timings.json, timings.txt (table + goals), one log per run under runs/.
#    CUBBY_GPU_COLD_REPEAT (3), CUBBY_GPU_REPEAT (warm, 5), CUBBY_GPU_XDIST (8),
#    CUBBY_GPU_PARTS (alone,xdist,fleet,fresh,overhead) choose what runs.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$root/ci/lib.sh"  # start_test_redis
gpu_step_start pytest.sh build/gpu "$@"
mkdir -p "$out/runs"
log() { printf '[cubby gpu pytest %s] %s\n' "$(date +%T)" "$*" >&2; }
python="$(command -v python3 || echo /usr/bin/python3)"

export CUBBY_LIBRARY="$build_dir/core/libcubby.so" CUBBY_CLI="$build_dir/cli/cubby"
export PYTHONPATH="$root/pytest_plugin/src${PYTHONPATH:+:$PYTHONPATH}"
unset CUBBY_DIR CUBBY_DISABLE CUBBY_REQUIRE_WARM CUBBY_NO_CUPY CUBBY_STATS_FILE CUPY_CACHE_IN_MEMORY
[ -f "$CUBBY_LIBRARY" ] || { echo "no $CUBBY_LIBRARY: build cubby first" >&2; exit 2; }
work="$(mktemp -d /tmp/cubby-gpu-pytest.XXXXXX)"
trap 'rm -rf "$work"; stop_test_redis' EXIT
{ nvidia-smi -L; "$python" -c 'import cupy, pytest; print("cupy", cupy.__version__, "pytest", pytest.__version__)'; } >"$out/env.txt" 2>&1

log "tests/python (the plugin's own tests; the mdspan file is timed below, not here)"
run_pytest "$root/tests/python" -q -rs -p no:cacheprovider \
  --ignore="$root/tests/python/gpu" >"$out/tests.log" 2>&1 || status=1
tail -n 3 "$out/tests.log" >&2

log "the CuPy adapter against real CuPy: a small smoke run (cold then warm, byte-identical results)"
run_pytest "$root/tests/python/gpu/test_cupy_mdspan.py" -q -p no:cacheprovider -p cubby.plugin \
  --cubby-dir="$work/smoke" -k "m00 or m01" >"$out/runs/smoke-cold.log" 2>&1 || status=1
run_pytest "$root/tests/python/gpu/test_cupy_mdspan.py" -q -p no:cacheprovider -p cubby.plugin \
  --cubby-dir="$work/smoke" --cubby-require-warm -k "m00 or m01" >"$out/runs/smoke-warm.log" 2>&1 || status=1
grep -E "^cupy:|passed|failed" "$out/runs/smoke-warm.log" >&2

unset CUBBY_REMOTE
start_test_redis || true
log "measurement (a cold run alone compiles 25 modules: about a minute each)"
"$python" "$root/ci/gpu/pytest_measure.py" --out "$out" --work "$work" --cli "$CUBBY_CLI" \
  --suite "$root/tests/python/gpu/test_cupy_mdspan.py" --cold-repeat "${CUBBY_GPU_COLD_REPEAT:-3}" \
  --warm-repeat "${CUBBY_GPU_REPEAT:-5}" --xdist "${CUBBY_GPU_XDIST:-8}" \
  --remote "${CUBBY_TEST_REDIS_URL:-}" --parts "${CUBBY_GPU_PARTS:-alone,xdist,fleet,fresh,overhead}" \
  || status=1
cat "$out/timings.txt" >&2
exit $status
