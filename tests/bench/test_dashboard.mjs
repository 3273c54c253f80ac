// Tests of bench/dashboard/build.mjs (node's own test runner; needs no npm package).
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const { readHistory, buildModel, renderPage, REGRESSION_FACTOR } = await import(
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
