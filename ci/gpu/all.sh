#!/usr/bin/env bash
# Every GPU run of the project, from an already-built tree, on a GPU machine without a network:
#   ci/gpu/all.sh OUT_DIR [BUILD_DIR] [STEP...]     (BUILD_DIR default build/gpu; STEPs default all)
# Steps: ctest recover harness store pytest bench (the default), and cupy-real (CuPy's own test
# files, ci/gpu/cupy-real.sh; needs .carry-cupy), cupy-dirs (whole directories of them, -n 8, own
# against cubby: ci/gpu/cupy-dirs.sh, each run bounded by CUBBY_CUPY_DIR_SECONDS) and cccl (the CCCL-reaching CuPy and C++ cases:
# tests/python/gpu/test_cupy_cccl.py, ctest -R 'Cccl|test_cub_vendored_cccl'). Each step is time-bounded
# (CUBBY_GPU_STEP_SECONDS, default 240) and writes to OUT_DIR/<step>/; OUT_DIR/status lists each
# step's exit status. Carry the build folder (and libbenchmark on LD_LIBRARY_PATH) there first.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:?usage: ci/gpu/all.sh OUT_DIR [BUILD_DIR] [STEP...]}"
build="$(cd "${2:-$root/build/gpu}" && pwd)"
shift $(( $# >= 2 ? 2 : 1 ))
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(ctest recover harness store pytest bench)
limit="${CUBBY_GPU_STEP_SECONDS:-240}"
mkdir -p "$out"
export CUBBY_BUILD_DIR="$build"
for step in "${steps[@]}"; do
  mkdir -p "$out/$step"
  start=$(date +%s)
  case "$step" in
    ctest) CUBBY_DIR="$(mktemp -d)" timeout "$limit" ctest --test-dir "$build" -j 12 --output-on-failure \
             >"$out/ctest/ctest.log" 2>&1 ;;
    recover) timeout "$limit" "$root/ci/gpu/recover.sh" "$out/recover" "$build" >"$out/recover/run.log" 2>&1 ;;
    harness) timeout "$limit" "$root/ci/gpu/harness.sh" "$out/harness" "$build" >"$out/harness/run.log" 2>&1 ;;
    store) timeout "$limit" "$root/ci/gpu/store-reliability.sh" "$out/store" "$build" >"$out/store/run.log" 2>&1 ;;
    pytest) timeout "$limit" "$root/ci/gpu/pytest.sh" "$out/pytest" "$build" >"$out/pytest/run.log" 2>&1 ;;
    bench) timeout "$limit" "$root/ci/gpu/bench.sh" "$out/bench" "$build" >"$out/bench/run.log" 2>&1 ;;
    cupy-real) CUBBY_GPU_STEP_SECONDS="$limit" timeout "$limit" "$root/ci/gpu/cupy-real.sh" "$out/cupy-real" "$build" \
                 >"$out/cupy-real/run.log" 2>&1 ;;
    cupy-dirs) timeout "$limit" "$root/ci/gpu/cupy-dirs.sh" "$out/cupy-dirs" "$build" \
                 >"$out/cupy-dirs/run.log" 2>&1 ;;
    cccl) { CUBBY_LIBRARY="$build/core/libcubby.so" PYTHONPATH="$root/pytest_plugin/src" \
              timeout $(( limit * 3 / 5 )) \
              python3 -m pytest "$root/tests/python/gpu/test_cupy_cccl.py" -q -rs -p no:cacheprovider
            python_status=$?
            CUBBY_DIR="$(mktemp -d)" timeout $(( limit - ($(date +%s) - start) )) ctest --test-dir "$build" \
              -R 'Cccl|test_cub_vendored_cccl' --output-on-failure && [ "$python_status" = 0 ]
          } >"$out/cccl/run.log" 2>&1 ;;
    *) echo "unknown step $step" >"$out/$step/run.log"; false ;;
  esac
  echo "$step=$? $(( $(date +%s) - start ))s" | tee -a "$out/status"
done
