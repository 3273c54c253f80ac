// Tests of bench/dashboard/build.mjs (node's own test runner; needs no npm package).
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const { readHistory, buildModel, renderPage, coldSuiteOrder, REGRESSION_FACTOR } = await import(
  path.join(root, "bench", "dashboard", "build.mjs"));

function record(commit, host, gpu, workloads, extra = {}) {
  return { schema: 1, commit, date: "2026-01-01T00:00:00+00:00",
           machine: { host, gpu: Boolean(gpu), gpu_name: gpu, arch: "sm_90", nvrtc: "13.0" },
           workloads, recovery: {}, suite: {}, skipped: {}, ...extra };
}

function withHistory(lines, body) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-test-dashboard-"));
  try {
    const file = path.join(dir, "history.jsonl");
    fs.writeFileSync(file, lines.join("\n") + "\n");
    return body(file);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test("a missing history gives no records and says how to start one", () => {
  const { records, problems } = readHistory(path.join(os.tmpdir(), "cubby-no-such-history.jsonl"));
  assert.equal(records.length, 0);
  assert.match(problems[0], /run ci\/bench\.sh/);
});

test("corrupt lines and other schemas are skipped and counted", () => {
  withHistory([
    JSON.stringify(record("a1", "box", "", { tiny: { warm_disk_us: 7 } })),
    "{broken",
    JSON.stringify({ schema: 99, workloads: {} }),
    "",
    JSON.stringify(record("a2", "box", "", { tiny: { warm_disk_us: 8 } })),
  ], (file) => {
    const { records, skipped, problems } = readHistory(file);
    assert.deepEqual(records.map((r) => r.commit), ["a1", "a2"]);
    assert.equal(skipped, 2);
    assert.match(problems[0], /:2: not JSON/);
    assert.match(problems[1], /:3: not a schema 1/);
  });
});

test("model: a chart per workload and kind, datasets split by machine, threshold at the median", () => {
  const records = [
    record("c1", "box", "", { mdspan50: { cold_ms: 1600, warm_disk_us: 80, speedup_disk: 20000 } }),
    record("c2", "gpu", "NVIDIA H200", { mdspan50: { cold_ms: 2400, warm_disk_us: 190, warm_loaded_us: 3600,
                                                    load_baseline_us: 2100, ratio_vs_load_baseline: 1.7 } }),
    record("c3", "box", "", { mdspan50: { cold_ms: 1700, warm_disk_us: 100, speedup_disk: 17000 } }),
  ];
  const model = buildModel(records);
  assert.deepEqual(model.points.map((p) => p.machine), ["box (no GPU)", "gpu (NVIDIA H200)", "box (no GPU)"]);
  const times = model.charts.find((c) => c.id === "times-mdspan50");
  const boxDisk = times.datasets.find((d) => d.label === "warm hit, disk @ box (no GPU)");
  assert.deepEqual(boxDisk.data, [80, null, 100]);
  assert.equal(boxDisk.limitOf, 90 * REGRESSION_FACTOR);
  const cold = times.datasets.find((d) => d.label === "cold compile @ gpu (NVIDIA H200)");
  assert.deepEqual(cold.data, [null, 2400000, null]);  // ms -> us
  assert.ok(times.datasets.some((d) => d.kind === "threshold" && d.label.includes("box")));
  const overhead = model.charts.find((c) => c.id === "overhead-mdspan50");
  assert.deepEqual(overhead.datasets[0].data, [null, 1.7, null]);
  assert.ok(overhead.datasets.some((d) => d.kind === "threshold" && d.data.every((v) => v === 1.15)));
  const speedup = model.charts.find((c) => c.id === "speedup-mdspan50");
  assert.ok(speedup.datasets.some((d) => d.kind === "goal"));
  assert.equal(model.charts.find((c) => c.id === "recovery").datasets.length, 0);
});

test("model: name recovery in percent and whole-suite runs", () => {
  const model = buildModel([record("c1", "box", "", {}, {
    recovery: { mdspan50: { cubby: 1, demangle: 0.5 } },
    suite: { "gtest-examples": { cold_s: 60, warm_s: 3, ratio: 20 } },
  })]);
  const recovery = model.charts.find((c) => c.id === "recovery");
  assert.deepEqual(recovery.datasets.map((d) => [d.label, d.data[0]]),
                   [["mdspan50/cubby @ box (no GPU)", 100], ["mdspan50/demangle @ box (no GPU)", 50]]);
  const suite = model.charts.find((c) => c.id === "suite");
  assert.deepEqual(suite.datasets.map((d) => d.data[0]), [60, 3]);
});

test("model: the whole-suite run after a header edit, beside cold and warm", () => {
  const model = buildModel([
    record("c1", "box", "", {}, { suite: { pytest: { cold_s: 60, warm_s: 3 } } }),  // before the edit run
    record("c2", "box", "", {}, { suite: { pytest: { cold_s: 62, warm_s: 3, edit_s: 21, edit_ratio: 2.95,
                                                     edit_serial_s: 59 } } }),
  ]);
  const suite = model.charts.find((c) => c.id === "suite");
  assert.deepEqual(suite.datasets.map((d) => [d.label, d.data]), [
    ["pytest 1st run (cold) @ box (no GPU)", [60, 62]],
    ["pytest 2nd run (warm) @ box (no GPU)", [3, 3]],
    ["pytest after a header edit (prefetch) @ box (no GPU)", [null, 21]],
    ["pytest after a header edit (no prefetch) @ box (no GPU)", [null, 59]],
  ]);
});

test("model: the cold suite's variants in order, in seconds, with their speedup over serial", () => {
  // results.json is written with sorted keys: the variants arrive in alphabetical order.
  const coldSuite = {
    "parallel:2": { ms: 12500, jobs: 2, speedup_vs_serial: 2 },
    "parallel_pch:16": { ms: 2000, jobs: 16, speedup_vs_serial: 12.5 },
    "parallel_pch:2": { ms: 10000, jobs: 2, speedup_vs_serial: 2.5 },
    pch: { ms: 20000, speedup_vs_serial: 1.25 },
    serial: { ms: 25000, speedup_vs_serial: 1 },
  };
  const model = buildModel([
    record("c1", "box", "", { "mdspan-suite": { cold_suite: coldSuite }, tiny: { warm_disk_us: 7 } }),
    record("c2", "gpu", "NVIDIA H200", { "mdspan-suite": { cold_suite: { serial: { ms: 9000 } } } }),
  ]);
  const times = model.charts.find((c) => c.id === "cold-suite-mdspan-suite");
  assert.equal(times.section, "mdspan-suite");
  assert.deepEqual(times.datasets.map((d) => [d.label, d.data]), [
    ["serial @ box (no GPU)", [25, null]],
    ["pch @ box (no GPU)", [20, null]],
    ["parallel:2 @ box (no GPU)", [12.5, null]],
    ["parallel_pch:2 @ box (no GPU)", [10, null]],
    ["parallel_pch:16 @ box (no GPU)", [2, null]],
    ["serial @ gpu (NVIDIA H200)", [null, 9]],
  ]);
  const speedup = model.charts.find((c) => c.id === "cold-suite-speedup-mdspan-suite");
  assert.deepEqual(speedup.datasets.map((d) => [d.label, d.data[0]]), [
    ["pch vs serial @ box (no GPU)", 1.25],
    ["parallel:2 vs serial @ box (no GPU)", 2],
    ["parallel_pch:2 vs serial @ box (no GPU)", 2.5],
    ["parallel_pch:16 vs serial @ box (no GPU)", 12.5],
  ]);
  // Workloads without BM_ColdSuite results get no cold-suite charts.
  assert.equal(model.charts.some((c) => c.id === "cold-suite-tiny"), false);
  assert.deepEqual(["parallel_pch:2", "other", "serial", "parallel:16", "parallel:2", "pch"].sort(coldSuiteOrder),
                   ["serial", "pch", "parallel:2", "parallel:16", "parallel_pch:2", "other"]);
});

test("model: the remote tier's fleet ratios, guarded by the 1.5x goal", () => {
  const model = buildModel([record("c1", "gpu", "NVIDIA H200", {
    mdspan50: { fleet_loaded_ratio_vs_local_warm: 1.26, fleet_ratio_vs_local_warm: 7.4 },
  }, { suite: { "gtest-examples": { cold_s: 55, warm_s: 0.5, fleet_over_warm: 0.9 } } })]);
  const fleet = model.charts.find((c) => c.id === "fleet");
  assert.deepEqual(fleet.datasets.map((d) => [d.label, d.data[0], d.limitOf ?? null]), [
    ["gtest-examples (whole process) @ gpu (NVIDIA H200)", 0.9, 1.5],
    ["mdspan50 + module loads @ gpu (NVIDIA H200)", 1.26, 1.5],
    ["mdspan50 lookups only @ gpu (NVIDIA H200)", 7.4, null],
    ["goal: <= 1.5x a local warm run", 1.5, null],
  ]);
  assert.equal(buildModel([record("c1", "box", "", {})]).charts.find((c) => c.id === "fleet").datasets.length, 0);
});

test("page: one file with the library inlined, charts without data say so, no script breakout", () => {
  const model = buildModel([record("</script><b>x", "box", "", { tiny: { warm_disk_us: 7 } })]);
  const html = renderPage(model, ["h.jsonl:2: not JSON; skipped"], "window.Chart = function () {};");
  assert.match(html, /window\.Chart = function/);
  assert.match(html, /id="box-times-tiny"/);
  assert.match(html, /no data yet/);
  assert.match(html, /h\.jsonl:2: not JSON/);
  assert.doesNotMatch(html, /src="http/);
  assert.equal(html.split("</script>").length - 1, 3);  // only the three script elements close
});
