#!/usr/bin/env bash
# Store-reliability checks of ci/test.sh (issue: store reliability): the whole C++ test suite under
# AddressSanitizer + UndefinedBehaviorSanitizer, and every libFuzzer target in fuzz/ for a bounded
# time. Source it after lib.sh; call sanitizer_tests and fuzz_runs (each a build, then a run:
# sanitizer_build/sanitizer_run, fuzz_build/fuzz_run, for callers that build ahead).
#   CUBBY_CI_SANITIZE=0     skip the sanitizer build
#   CUBBY_CI_FUZZ=0         skip the fuzz runs
#   CUBBY_FUZZ_SECONDS=60   time per fuzz target

# Clang and libFuzzer (libclang_rt.fuzzer) for the fuzz targets.
CUBBY_FUZZ_APT_PACKAGES=(clang libclang-rt-14-dev)

# sanitizer_tests BUILD_ROOT: sanitizer_build BUILD_ROOT, then sanitizer_run BUILD_ROOT.
sanitizer_tests() {
  [ "${CUBBY_CI_SANITIZE:-1}" = 1 ] || { log "skipped: sanitizer build (CUBBY_CI_SANITIZE=0)"; return 0; }
  sanitizer_build "$1"
  sanitizer_run "$1"
}

# sanitizer_build BUILD_ROOT: builds the tests with -fsanitize=address,undefined (GCC, -O1) in
# BUILD_ROOT-asan: the targets the test run needs (no benchmarks).
sanitizer_build() {
  [ "${CUBBY_CI_SANITIZE:-1}" = 1 ] || return 0
  local build_dir="$1-asan"
  local flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
  # Warnings are enforced by the main build: GCC 12's -Wmaybe-uninitialized reports false
  # positives inside <regex> and <functional> under -fsanitize, so this build does not use -Werror.
  # -O1 and line tables only (-g1), as the sanitizers' documentation suggests: the same checks,
  # stack traces with file and line, and 45% less compile time than -O2 -g (cache.cpp: 11.0 s vs
  # 20.1 s of CPU).
  local optimise="-O1 -g1 -DNDEBUG"
  configure_and_build "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUBBY_WERROR=OFF \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$optimise" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$optimise" \
    -DCUBBY_BUILD_BENCH=OFF "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_C_FLAGS=$flags" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
    "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined"
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

# fuzz_runs BUILD_ROOT: fuzz_build BUILD_ROOT, then fuzz_run BUILD_ROOT.
fuzz_runs() {
  [ "${CUBBY_CI_FUZZ:-1}" = 1 ] || { log "skipped: fuzz runs (CUBBY_CI_FUZZ=0)"; return 0; }
  fuzz_build "$1"
  fuzz_run "$1"
}

# fuzz_build BUILD_ROOT: builds fuzz/fuzz_*.cpp with clang (libFuzzer + ASan + UBSan) in
# BUILD_ROOT-fuzz.
fuzz_build() {
  [ "${CUBBY_CI_FUZZ:-1}" = 1 ] || return 0
  apt_install "${CUBBY_FUZZ_APT_PACKAGES[@]}"
  local flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined"
  # Line tables only: crash reports keep file and line, the build is quicker than with -g.
  local optimise="-O2 -gline-tables-only -DNDEBUG"
  CC=clang CXX=clang++ configure_and_build "$1-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$optimise" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$optimise" \
    -DCUBBY_FUZZ=ON -DCUBBY_BUILD_TESTS=OFF -DCUBBY_BUILD_BENCH=OFF -DCUBBY_BUILD_CLI=OFF \
    -DCUBBY_BUILD_GTEST=OFF "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_C_FLAGS=$flags"
}

# fuzz_run BUILD_ROOT: runs each target fuzz_build built for CUBBY_FUZZ_SECONDS, seeded with the
# golden files.
fuzz_run() {
  [ "${CUBBY_CI_FUZZ:-1}" = 1 ] || { log "skipped: fuzz runs (CUBBY_CI_FUZZ=0)"; return 0; }
  local build_dir="$1-fuzz"
  local seconds="${CUBBY_FUZZ_SECONDS:-60}"
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
