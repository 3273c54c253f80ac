#!/usr/bin/env bash
# Store-reliability checks of ci/test.sh (issue: store reliability): the whole C++ test suite under
# AddressSanitizer + UndefinedBehaviorSanitizer, and every libFuzzer target in fuzz/ for a bounded
# time. Both come from one clang build (sanitizer_build, in BUILD_ROOT-asan): the library is
# compiled once with ASan + UBSan and libFuzzer's coverage instrumentation (-fsanitize=
# fuzzer-no-link), the tests and the tool link it as they are, the fuzz targets link it with
# libFuzzer. Source it after lib.sh; call sanitizer_build, then sanitizer_run and fuzz_run.
#   CUBBY_CI_SANITIZE=0     without the sanitizer tests (the build then makes the fuzz targets only)
#   CUBBY_CI_FUZZ=0         without the fuzz targets and runs
#   CUBBY_FUZZ_SECONDS=30   time per fuzz target

# Clang, its sanitizer runtimes and libFuzzer (libclang_rt.fuzzer): the sanitizer build.
CUBBY_SANITIZER_APT_PACKAGES=(clang libclang-rt-14-dev)

# sanitizer_build BUILD_ROOT: builds with clang, -fsanitize=address,undefined, in BUILD_ROOT-asan:
# the tests, the tool and the harness (not the benchmarks, which no sanitizer run starts) unless
# CUBBY_CI_SANITIZE=0, and the fuzz targets (CUBBY_FUZZ=ON) unless CUBBY_CI_FUZZ=0.
sanitizer_build() {
  local sanitize="${CUBBY_CI_SANITIZE:-1}" fuzz="${CUBBY_CI_FUZZ:-1}"
  [ "$sanitize" = 1 ] || [ "$fuzz" = 1 ] || return 0
  apt_install "${CUBBY_SANITIZER_APT_PACKAGES[@]}"
  local on=OFF fuzz_on=OFF
  [ "$sanitize" = 1 ] && on=ON
  [ "$fuzz" = 1 ] && fuzz_on=ON
  local flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
  # Warnings are enforced by the main build (GCC, -Werror). -O1 and line tables only, as the
  # sanitizers' documentation suggests: the same checks, stack traces with file and line. The
  # tests' own sources are compiled -O0 (a third less compile time than -O1; their run time is
  # the library's and NVRTC's), the library stays -O1 for the fuzz targets' speed.
  local optimise="-O1 -gline-tables-only -DNDEBUG"
  CC=clang CXX=clang++ configure_and_build "$1-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCUBBY_WERROR=OFF "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$optimise" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$optimise" "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_C_FLAGS=$flags" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
    "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined" -DCUBBY_TEST_COMPILE_OPTIONS=-O0 \
    -DCUBBY_BUILD_BENCH=OFF "-DCUBBY_BUILD_TESTS=$on" "-DCUBBY_BUILD_CLI=$on" \
    "-DCUBBY_BUILD_GTEST=$on" "-DCUBBY_FUZZ=$fuzz_on"
}

# sanitizer_run BUILD_ROOT: runs the tests sanitizer_build built (GPU tests skip without a GPU;
# the install tests are left out).
sanitizer_run() {
  [ "${CUBBY_CI_SANITIZE:-1}" = 1 ] || { log "skipped: sanitizer tests (CUBBY_CI_SANITIZE=0)"; return 0; }
  local build_dir="$1-asan"
  log "running the C++ tests under ASan + UBSan"
  # Leak checking is off: libnvrtc (loaded with dlopen) keeps its allocations until exit.
  ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1" \
    ctest --test-dir "$build_dir" --output-on-failure -j "$(ctest_jobs)" -LE install \
    || { ctest_slowest "$build_dir"; die "tests failed under the sanitizers (output above)"; }
  ctest_slowest "$build_dir"
}

# fuzz_run BUILD_ROOT: runs each fuzz target sanitizer_build built for CUBBY_FUZZ_SECONDS, seeded
# with the golden files.
fuzz_run() {
  [ "${CUBBY_CI_FUZZ:-1}" = 1 ] || { log "skipped: fuzz runs (CUBBY_CI_FUZZ=0)"; return 0; }
  local build_dir="$1-asan"
  local seconds="${CUBBY_FUZZ_SECONDS:-30}"
  # The targets run side by side, one per core (each alone for its CUBBY_FUZZ_SECONDS: as
  # much fuzzing per target as one at a time), then their reports are printed in order.
  local target name corpus jobs failed=() pids=() names=()
  jobs="$(nproc 2>/dev/null || echo 2)"
  local logs="$build_dir/fuzz-logs"
  rm -rf "$logs" && mkdir -p "$logs"
  for target in "$build_dir"/fuzz/fuzz_*; do
    [ -x "$target" ] || continue
    name="$(basename "$target")"
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    log "fuzzing $name for ${seconds} s"
    (
      corpus="$(mktemp -d /tmp/cubby-fuzz-corpus.XXXXXX)"
      trap 'rm -rf "$corpus"' EXIT
      cp "$CUBBY_ROOT"/tests/golden/*.bin "$corpus"/ 2>/dev/null || true
      # Inputs that once crashed a target stay in its seed corpus (fuzz/regressions/<target>/).
      cp "$CUBBY_ROOT/fuzz/regressions/$name"/* "$corpus"/ 2>/dev/null || true
      ASAN_OPTIONS="detect_leaks=0" "$target" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build_dir/" "$corpus"
    ) >"$logs/$name.log" 2>&1 &
    pids+=("$!") names+=("$name")
  done
  local i
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed+=("${names[$i]}")
    log "fuzz report of ${names[$i]}:"
    tail -n 12 "$logs/${names[$i]}.log" >&2
  done
  [ ${#failed[@]} -eq 0 ] \
    || die "${failed[*]} found a crash (output above; inputs saved in $build_dir/, logs in $logs/)"
}
