#!/usr/bin/env bash
# GPU run of the GoogleTest harness (issue 5), from an already-built tree (no build, no network):
#   ci/gpu/harness.sh OUT_DIR [BUILD_DIR]        BUILD_DIR default $CUBBY_BUILD_DIR, else build/ci
# 1. the example suite (tests/examples: 24 programs, 336 kernels, launch tests included) cold on
#    an empty store, then warm (ci/suite-timing.sh): OUT_DIR/suite-timing.txt (the tables),
#    OUT_DIR/timing/{timing.json,*.log,*.xml}. Goals: warm >= 20x faster than cold, and the warm
#    run within 10% of the suite with compilation removed (warm - the time inside cubby's lookups,
#    from the harness's cubby_lookup_ms): "warm / removed" <= 1.10. With a redis-server
#    (CUBBY_TEST_REDIS_SERVER, e.g. from ci/gpu/carry.sh), also the fleet simulation: a fresh
#    store's first run served by Redis within 1.5x of the local warm run, >= 100x faster than cold.
# 2. the example suite's launch tests with an XML report: OUT_DIR/examples-gpu.xml
# 3. through ctest, on a fresh store: the harness's own tests (label harness) and the example
#    suite with its warm-up fixture (label examples): OUT_DIR/ctest-harness.log
# Exit status: non-zero if any of them failed.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_step_start harness.sh build/ci "$@"
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv; } >"$out/gpu.txt" 2>&1

"$root/ci/suite-timing.sh" "$build_dir" "$out/timing" 2>&1 | tee "$out/suite-timing.txt" || status=1
if [ -f "$out/timing/timing.json" ]; then
  /usr/bin/env python3 - "$out/timing/timing.json" <<'PY' | tee -a "$out/suite-timing.txt"
import json, sys
t = json.load(open(sys.argv[1]))
cold, warm = t["cold_s"]["test_mdspan_transform"], t["warm_s"]["test_mdspan_transform"]
speedup = cold / warm if warm > 0 else float("inf")
ratio = t.get("warm_over_removed")
print(f"goals: test_mdspan_transform cold/warm {speedup:.0f}x (goal >= 20x: {'met' if speedup >= 20 else 'NOT met'}); "
      f"whole suite warm/removed {ratio} (goal <= 1.10: {'met' if ratio is not None and ratio <= 1.10 else 'NOT met'}); "
      f"cubby lookups {t['warm_cubby_lookup_ms']['suite']} ms of {t['warm_s']['suite'] * 1000:.1f} ms")
fleet, faster = t.get("fleet_over_warm"), t.get("cold_over_fleet")
if fleet is None:
    print(f"fleet simulation skipped: {t.get('fleet_skipped')}")
else:
    print(f"goals: fleet first run / local warm run {fleet:.3f} (goal <= 1.5: {'met' if fleet <= 1.5 else 'NOT met'}); "
          f"cold / fleet first run {faster:.0f}x (goal >= 100x: {'met' if faster >= 100 else 'NOT met'})")
PY
fi

store="$(mktemp -d /tmp/cubby-harness-gpu.XXXXXX)"
trap 'rm -rf "$store"' EXIT
CUBBY_DIR="$store/a" "$build_dir/tests/examples/test_mdspan_transform" --gtest_filter='*Gpu*' \
  --gtest_output="xml:$out/examples-gpu.xml" >"$out/examples-gpu.log" 2>&1 || status=1
grep -q 'SKIPPED' "$out/examples-gpu.log" && { echo "launch tests skipped: no GPU?" >>"$out/examples-gpu.log"; status=1; }
tail -n 8 "$out/examples-gpu.log"

CUBBY_DIR="$store/b" ctest --test-dir "$build_dir" -L 'harness|examples' -j 8 --output-on-failure \
  >"$out/ctest-harness.log" 2>&1 || status=1
tail -n 12 "$out/ctest-harness.log"
echo "ci/gpu/harness.sh: status $status (0 = all passed); results in $out"
exit $status
