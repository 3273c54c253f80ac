// Tests of bench/dashboard/build.mjs (node's own test runner; needs no npm package).
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const { readHistory, buildModel, renderPage, coldSuiteOrder, runLabel, REGRESSION_FACTOR } = await import(
  path.join(root, "bench", "dashboard", "build.mjs"));
const { machineName, gpuModel } = await import(path.join(root, "bench", "dashboard", "machines.mjs"));
const { goalStatus, renderHeadline } = await import(path.join(root, "bench", "dashboard", "headline.mjs"));
const verdict = await import(path.join(root, "bench", "dashboard", "verdict.mjs"));
const format = await import(path.join(root, "bench", "dashboard", "format.mjs"));
const fixture = path.join(root, "tests", "bench", "fixtures", "dashboard-history.jsonl");

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
  assert.deepEqual(model.points.map((p) => p.machine), ["no GPU", "H200", "no GPU"]);
  const times = model.charts.find((c) => c.id === "times-mdspan50");
  const boxDisk = times.datasets.find((d) => d.label === "warm hit, disk @ no GPU");
  assert.deepEqual(boxDisk.data, [80, null, 100]);
  assert.equal(boxDisk.limitOf, 90 * REGRESSION_FACTOR);
  const cold = times.datasets.find((d) => d.label === "cold compile @ H200");
  assert.deepEqual(cold.data, [null, 2400000, null]);  // ms -> us
  assert.ok(times.datasets.some((d) => d.kind === "threshold" && d.label.endsWith("@ no GPU")));
  // Without BM_HitVsLoad the hit-path chart shows the old ratio of two separate families, marked "old".
  const overhead = model.charts.find((c) => c.id === "overhead-mdspan50");
  assert.deepEqual(overhead.datasets[0].data, [null, 1.7, null]);
  assert.equal(overhead.datasets[0].kind, "old");
  assert.ok(overhead.datasets.some((d) => d.kind === "threshold" && d.data.every((v) => v === 1.08)));
  const speedup = model.charts.find((c) => c.id === "speedup-mdspan50");
  assert.ok(speedup.datasets.some((d) => d.kind === "goal"));
  assert.equal(model.charts.find((c) => c.id === "recovery").datasets.length, 0);
});

test("model: name recovery as one bar chart, cubby vs baseline per corpus, from the latest run", () => {
  const methods = (matcher, baseline) => ({ matcher, matcher_text: matcher, driver: matcher, baseline });
  const model = buildModel([
    record("c1", "box", "", {}, { recovery: { mdspan50: methods(0.5, 0.1) } }),
    record("c2", "box", "", {}, { recovery: { values: methods(0.97, 0.34), mdspan50: methods(1, 0.04) } }),
    record("c3", "box", "", {}),  // no recovery results: the chart keeps c2's
  ]);
  const recovery = model.charts.find((c) => c.id === "recovery");
  assert.equal(recovery.type, "bar");
  assert.deepEqual(recovery.labels, ["mdspan50", "values"]);
  assert.deepEqual(recovery.datasets.map((d) => [d.label, d.data]), [
    ["cubby (matcher)", [100, 97]],
    ["baseline (demangle, strip, compare text)", [4, 34]],
  ]);
  assert.match(recovery.title, /c2/);
  assert.equal(buildModel([record("c1", "box", "", {})]).charts.find((c) => c.id === "recovery").datasets.length, 0);
});

test("model: whole-suite runs in seconds", () => {
  const model = buildModel([record("c1", "box", "", {}, { suite: { "gtest-examples": { cold_s: 60, warm_s: 3, ratio: 20 } } })]);
  const suite = model.charts.find((c) => c.id === "suite");
  assert.deepEqual(suite.datasets.map((d) => d.data[0]), [60, 3]);
});

test("machines: one identity from the GPU model and CPU count, whatever the host and CPU model say; a label wins", () => {
  const rec = (machine) => ({ machine });
  const h200 = rec({ host: "vm", cpus: 16, gpu: true, gpu_name: "NVIDIA H200" });
  const h200Later = rec({ host: "gpu-b", cpus: 16, gpu: true, gpu_name: "H200", cpu_model: "AMD EPYC" });
  const dev = rec({ host: "vm", cpus: 2, gpu: false, gpu_name: "" });
  const devLater = rec({ host: "ci-runner-17", cpus: 2, gpu: false, gpu_name: "", cpu_model: "AMD EPYC" });
  assert.equal(machineName(h200), "H200, 16 CPUs");
  assert.equal(machineName(h200Later), "H200, 16 CPUs");
  assert.equal(machineName(dev), "no GPU, 2 CPUs");
  assert.equal(machineName(devLater), "no GPU, 2 CPUs");
  assert.equal(machineName(rec({ cpus: 8, gpu: true, gpu_name: "NVIDIA  GeForce RTX 4090" })), "RTX 4090, 8 CPUs");
  assert.equal(machineName(rec({ cpus: 1, gpu: true, gpu_name: "" })), "GPU, 1 CPU");
  assert.equal(machineName(rec({ gpu: false })), "no GPU");
  assert.equal(machineName(rec({ host: "vm", cpus: 16, gpu: true, gpu_name: "NVIDIA H200", label: " lab H200 " })), "lab H200");
  assert.equal(gpuModel({ gpu: true, gpu_name: "Tesla V100-SXM2-16GB" }), "V100-SXM2-16GB");
  // The model's points and the headline: one machine per identity.
  const model = buildModel([{ ...record("c1", "vm", "NVIDIA H200", { tiny: { warm_disk_us: 9 } }), machine: h200.machine },
                            { ...record("c2", "gpu-b", "H200", { tiny: { warm_disk_us: 10 } }), machine: h200Later.machine }]);
  assert.deepEqual(model.points.map((p) => p.machine), ["H200, 16 CPUs", "H200, 16 CPUs"]);
  assert.equal(model.headline.machines.length, 1);
  const disk = model.charts.find((c) => c.id === "times-tiny").datasets.filter((d) => d.label.startsWith("warm hit, disk"));
  assert.deepEqual(disk.map((d) => d.data), [[9, 10]]);  // one line through both runs
});

test("x labels: short commit (dirty marked) and day", () => {
  assert.equal(runLabel({ commit: "727c5a4c1b6fe2cbe6837241ad638669f43be563", date: "2026-11-29T17:44:18+00:00" }),
               "727c5a4 11-29");
  assert.equal(runLabel({ commit: "c7b409d8f947-dirty", date: "2026-11-29T16:25:25+00:00" }), "c7b409d* 11-29");
  assert.equal(runLabel({}), "?");
});

function hitLoad(ratio, extra = {}) {
  return { hit_load_ratio: ratio, hit_load_ratio_p10: ratio - 0.02, hit_load_ratio_p90: ratio + 0.03, ...extra };
}

test("model: the hit path over the bare load, median with its band, faults on the 1.0 line, never as values", () => {
  const model = buildModel([
    record("c1", "gpu", "NVIDIA H200", { mdspan50: hitLoad(1.05) }),
    record("c2", "gpu", "NVIDIA H200", { mdspan50: hitLoad(0.97) }),  // a measurement fault
    record("c3", "gpu", "NVIDIA H200", { mdspan50: { ratio_vs_load_baseline: 1.2 } }),  // old, measured apart
    record("c4", "gpu", "NVIDIA H200", { mdspan50: { ratio_vs_load_baseline: 0.8 } }),  // old and a fault
    record("c5", "box", "", { mdspan50: { warm_disk_us: 80 } }),
  ]);
  const chart = model.charts.find((c) => c.id === "overhead-mdspan50");
  const by = Object.fromEntries(chart.datasets.map((d) => [d.kind, d]));
  assert.deepEqual(by.guarded.data, [1.05, null, null, null, null]);
  assert.equal(by.guarded.limitOf, 1.08);
  assert.ok(Math.abs(by["band-low"].data[0] - 1.03) < 1e-9 && Math.abs(by["band-high"].data[0] - 1.08) < 1e-9);
  assert.deepEqual(by.old.data, [null, null, 1.2, null, null]);
  assert.deepEqual(by.fault.data, [null, 1, null, 1, null]);
  assert.deepEqual(by.fault.faults, [null, 0.97, null, 0.8, null]);
  assert.ok(chart.datasets.every((d) => d.kind === "fault" || d.kind === "threshold" ||
                                       d.data.every((v) => v == null || v >= 1)));
  assert.equal(by.threshold.data[0], 1.08);
  const tiny = buildModel([record("c1", "gpu", "NVIDIA H200", { tiny: hitLoad(1.1) })]).charts
    .find((c) => c.id === "overhead-tiny");
  assert.equal(tiny.datasets.find((d) => d.kind === "threshold").data[0], 1.2);
});

test("model: hit rate and compile time saved over time", () => {
  const model = buildModel([
    record("c1", "box", "", { mdspan50: { cold_ms: 3000, warm_disk_us: 200 } },
           { suite: { gtest: { cold_s: 50, warm_s: 1, warm_hits: 24, warm_misses: 0, edit_hits: 18, edit_misses: 6,
                               warm_compile_saved_s: 45 } } }),
    record("c2", "box", "", {}, { suite: { gtest: { cold_s: 40, warm_s: 2 } } }),  // no stats
  ]);
  const rate = model.charts.find((c) => c.id === "hit-rate");
  assert.deepEqual(rate.datasets.map((d) => [d.label, d.data]), [
    ["gtest 2nd run (warm) @ no GPU", [100, null]],
    ["gtest after a header edit (prefetch) @ no GPU", [75, null]],
  ]);
  const saved = model.charts.find((c) => c.id === "time-saved");
  assert.deepEqual(saved.datasets.map((d) => [d.label, d.data]), [
    ["gtest whole run @ no GPU", [49, 38]],
    ["gtest warm run's hits (stats) @ no GPU", [45, null]],
    ["mdspan50 lookup @ no GPU", [2.9998, null]],
  ]);
  assert.equal(buildModel([record("c1", "box", "", {})]).charts.find((c) => c.id === "hit-rate").datasets.length, 0);
});

test("headline: the latest run of every machine, newest first, with every goal's status", () => {
  const goals = (ratio) => [
    { goal: "mdspan50 warm disk hit >= 1000x faster than cold", value: 20000, target: 1000, status: "pass" },
    { goal: "tiny warm disk hit <= 20 us (no module load)", value: 25, target: 20, status: "fail" },
    { goal: "mdspan50 hit + load <= 1.08x bare load (BM_HitVsLoad, interleaved median; GPU)", value: ratio,
      target: 1.08, status: ratio == null ? "n/a" : "pass", floor: 1,
      spread: ratio == null ? [null, null] : [ratio - 0.02, ratio + 0.03] },
  ];
  const at = (r, date) => ({ ...r, date });
  const model = buildModel([
    at(record("old1", "gpu", "NVIDIA H200", { mdspan50: hitLoad(1.2) }, { goals: goals(1.2) }), "2026-01-01T00:00:00+00:00"),
    at(record("cpu1", "box", "", { mdspan50: { cold_ms: 4000, warm_disk_us: 230, speedup_disk: 17000 } },
              { goals: goals(null), suite: { gtest: { cold_s: 60, warm_s: 1, ratio: 60 } } }), "2026-01-02T00:00:00+00:00"),
    at(record("new1", "gpu", "NVIDIA H200", { mdspan50: hitLoad(0.98, { cold_ms: 2500, warm_disk_us: 150 }) },
              { goals: goals(0.98) }), "2026-01-03T00:00:00+00:00"),
  ]);
  const { machines, goals: rows } = model.headline;
  assert.deepEqual(machines.map((m) => [m.label, m.commit]), [["H200", "new1"], ["no GPU", "cpu1"]]);
  assert.deepEqual(machines[1].rows.map((r) => r.name), ["mdspan50", "whole suite gtest"]);
  assert.equal(machines[0].rows[0].ratio.fault, true);
  assert.equal(rows.length, 3);
  // The GPU run's hit-path goal is below its floor: a fault, whatever the record said.
  assert.deepEqual(rows.map((g) => machines.map((m) => m.goals[g].status)),
                   [["pass", "pass"], ["fail", "fail"], ["fault", "n/a"]]);
  const html = renderHeadline(model.headline);
  assert.equal((html.match(/<tbody data-machine=/g) ?? []).length, 2);
  assert.equal((html.match(/data-status="fault"/g) ?? []).length, 1);
  assert.equal((html.match(/data-status="pass"/g) ?? []).length, 2);
  assert.match(html, /fault: 0\.98x/);
  assert.match(html, /17,000x/);
  assert.match(renderPage(model, [], ""), /<table id="headline"[\s\S]*<table id="goals"/);
});

test("goal status: retired old hit-path goal, faults below the floor, unknown statuses are n/a", () => {
  const old = "mdspan-suite BM_WarmHitLoaded <= 1.15x BM_ModuleLoadBaseline (GPU)";
  assert.equal(goalStatus({ goal: old, value: 0.83, status: "pass" }), "fault");
  assert.equal(goalStatus({ goal: old, value: 1.1, status: "pass" }), "retired");
  assert.equal(goalStatus({ goal: "x", value: 0.9, floor: 1, status: "pass" }), "fault");
  assert.equal(goalStatus({ goal: "x", value: 2, status: "fail" }), "fail");
  assert.equal(goalStatus({ goal: "x", value: null, status: "weird" }), "n/a");
});

test("model: the whole-suite run after a header edit, beside cold and warm", () => {
  const model = buildModel([
    record("c1", "box", "", {}, { suite: { pytest: { cold_s: 60, warm_s: 3 } } }),  // before the edit run
    record("c2", "box", "", {}, { suite: { pytest: { cold_s: 62, warm_s: 3, edit_s: 21, edit_ratio: 2.95,
                                                     edit_serial_s: 59 } } }),
  ]);
  const suite = model.charts.find((c) => c.id === "suite");
  assert.deepEqual(suite.datasets.map((d) => [d.label, d.data]), [
    ["pytest 1st run (cold) @ no GPU", [60, 62]],
    ["pytest 2nd run (warm) @ no GPU", [3, 3]],
    ["pytest after a header edit (prefetch) @ no GPU", [null, 21]],
    ["pytest after a header edit (no prefetch) @ no GPU", [null, 59]],
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
    ["serial @ no GPU", [25, null]],
    ["pch @ no GPU", [20, null]],
    ["parallel:2 @ no GPU", [12.5, null]],
    ["parallel_pch:2 @ no GPU", [10, null]],
    ["parallel_pch:16 @ no GPU", [2, null]],
    ["serial @ H200", [null, 9]],
  ]);
  const speedup = model.charts.find((c) => c.id === "cold-suite-speedup-mdspan-suite");
  assert.deepEqual(speedup.datasets.map((d) => [d.label, d.data[0]]), [
    ["pch vs serial @ no GPU", 1.25],
    ["parallel:2 vs serial @ no GPU", 2],
    ["parallel_pch:2 vs serial @ no GPU", 2.5],
    ["parallel_pch:16 vs serial @ no GPU", 12.5],
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
    ["gtest-examples (whole process) @ H200", 0.9, 1.5],
    ["mdspan50 + module loads @ H200", 1.26, 1.5],
    ["mdspan50 lookups only @ H200", 7.4, null],
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

// A run of one machine with the given headline values (us) and goals.
function run(commit, day, values, extra = {}) {
  return { schema: 1, commit, date: `2026-02-${String(day).padStart(2, "0")}T00:00:00+00:00`,
           machine: { host: "vm", cpus: 2, gpu: false, gpu_name: "", arch: "sm_90" },
           workloads: { tiny: { warm_disk_us: values.disk, cold_ms: values.cold } }, recovery: {}, suite: {}, skipped: {},
           ...extra };
}

test("noise band: median and MAD of the previous runs, never narrower than +-6% of the median", () => {
  const band = verdict.noiseBand([10, 11, 12, 30]);  // one wild run barely moves it
  assert.equal(band.median, 11.5);
  assert.equal(band.n, 4);
  assert.ok(Math.abs(band.sigma - 1.4826) < 1e-9);  // 1.4826 x MAD (1)
  assert.ok(Math.abs(band.high - (11.5 + 3 * 1.4826)) < 1e-9);
  const flat = verdict.noiseBand([100, 100, 100]);
  assert.ok(Math.abs(flat.low - 94) < 1e-9 && Math.abs(flat.high - 106) < 1e-9);
  assert.equal(verdict.compare(105, [100, 100, 100]).status, "within");
  assert.equal(verdict.compare(107, [100, 100, 100]).status, "slower");
  assert.equal(verdict.compare(93, [100, 100, 100]).status, "faster");
  assert.equal(verdict.compare(93, [100, 100, 100], false).status, "slower");  // higher is better
  assert.equal(verdict.compare(500, [100, 100]), null);  // too few for a band
});

test("verdict: slower by X% beyond the noise band, naming the metric; still fast within it", () => {
  const before = [[18, 32], [19, 33], [17.8, 31], [18.5, 33], [18.2, 32], [18.9, 32.5]].map(([disk, cold], i) => run(`c${i}`, i + 1, { disk, cold }));
  const slow = verdict.machineVerdict([...before, run("new", 9, { disk: 41.1, cold: 32 })]);
  assert.equal(slow.status, "slower");
  assert.equal(slow.previousRuns, 5);  // the previous 5, not all 6
  assert.equal(slow.slower[0].name, "tiny warm disk hit");
  assert.ok(Math.abs(slow.change - (41.1 / 18.5 - 1)) < 1e-9);  // median of the previous 5: 18.5
  assert.match(slow.text, /^latest run vs the previous 5 on this machine: slower by 122% \(beyond its noise band\): tiny warm disk hit 41\.1 µs vs 18\.5 µs, the median of the previous 5 \(band .* to .*\); load unknown$/);
  const fast = verdict.machineVerdict([...before, run("new", 9, { disk: 18.7, cold: 31.5 })]);
  assert.equal(fast.status, "fast");
  assert.equal(fast.text, "latest run vs the previous 5 on this machine: still fast (2 metrics within their noise band); load unknown");
  const faster = verdict.machineVerdict([...before, run("new", 9, { disk: 9, cold: 32 })]);
  assert.equal(faster.status, "fast");
  assert.match(faster.text, /still fast \(1 metric within its noise band; faster beyond it: tiny warm disk hit −51%\)/);
  // "still fast" only when the run's goals hold.
  const failing = verdict.machineVerdict([...before, run("new", 9, { disk: 18.7, cold: 31.5 })], ["tiny warm disk hit <= 20 us"]);
  assert.equal(failing.status, "goals-fail");
  assert.doesNotMatch(failing.text, /still fast/);
  assert.match(failing.text, /within the noise band of the previous runs, but 1 goal fails: tiny warm disk hit <= 20 us/);
  // The first run records the baseline; too few earlier runs that measured the same: no verdict.
  assert.equal(verdict.machineVerdict([before[0]]).status, "baseline");
  assert.match(verdict.machineVerdict([before[0]]).text, /^first run: baseline recorded; load unknown$/);
  const other = run("x", 9, { disk: 20, cold: 30 });
  other.workloads = { mdspan50: { warm_disk_us: 200 } };
  assert.match(verdict.machineVerdict([...before, other]).text, /no verdict: fewer than 3 of them measured what this run measured/);
  // A fault (hit + load below the bare load) is never compared.
  assert.deepEqual(Object.keys(verdict.headlineMetrics({ workloads: { tiny: { hit_load_ratio: 0.9, hit_load_us: 90 } } })),
                   ["tiny hit + load"]);
});

test("load: under load from the recorded load averages, else 'load unknown'", () => {
  const at = (start, end, cpus = 2) => verdict.loadOf({ machine: { cpus }, load: { start, end } });
  assert.equal(verdict.loadOf({ machine: { cpus: 2 } }).text, "load unknown");
  assert.equal(at([2.91, 2, 1.5], [2.37, 2.2, 1.6]).text, "load 2.91 at the start, 2.37 at the end on 2 CPUs: under load");
  assert.equal(at([0.2, 0.1, 0], [1.1, 0.5, 0.2]).underLoad, false);  // the benchmark's own thread
  assert.equal(at([8.9, 4, 2], null, 16).underLoad, false);
  assert.equal(at(null, [9, 4, 2], 16).text, "load 9.00 at the end on 16 CPUs: under load");
  assert.equal(at(["x"], null).known, false);
});

test("goal failure: its values in the previous runs with their band, and the load", () => {
  const goal = (value) => [{ goal: "tiny warm disk hit <= 20 us (no module load)", value, target: 20, status: value > 20 ? "fail" : "pass" }];
  const earlier = [17.9, 18.9, 17.8, 18.5].map((v, i) => run(`c${i}`, i + 1, { disk: v }, { goals: goal(v) }));
  const loaded = run("new", 9, { disk: 41.1 }, { goals: goal(41.1), load: { start: [2.91, 2, 1.5] } });
  const context = verdict.goalContext(loaded.goals[0], loaded, earlier);
  assert.equal(context.previous.status, "slower");
  assert.equal(context.text, "previous 4 here: 17.8–18.9 (median 18.2): worse beyond its noise band (+126%) · " +
                             "load 2.91 at the start on 2 CPUs: under load");
  const noisy = verdict.goalContext({ ...goal(20.5)[0], spread: [19, 22] }, run("n", 9, { disk: 20.5 }), earlier.concat(
    [21, 20.8, 20.9].map((v, i) => run(`d${i}`, i + 5, { disk: v }, { goals: goal(v) }))));
  assert.equal(noisy.previous.status, "within");
  assert.deepEqual(noisy.own, [19, 22]);
  assert.match(noisy.text, /within its noise band · load unknown$/);
  assert.equal(verdict.goalContext(goal(25)[0], run("f", 1, { disk: 25 }), []).text, "no earlier run here · load unknown");
  assert.match(verdict.goalContext(goal(25)[0], run("f", 3, { disk: 25 }), earlier.slice(0, 2)).text,
               /^previous 2 here: 17\.9–18\.9 \(too few for a noise band\)/);
  // A higher-is-better goal that dropped: worse.
  const speed = (value) => ({ goal: "mdspan50 warm disk hit >= 1000x faster than cold", value, target: 1000, status: "pass" });
  const runs = [20000, 21000, 20500].map((v, i) => run(`s${i}`, i + 1, {}, { goals: [speed(v)] }));
  assert.equal(verdict.goalContext(speed(12000), run("s", 9, {}), runs).previous.status, "slower");
});

test("headline: a verdict line per machine and the failed goals' context, from the fixture history", () => {
  const { records } = readHistory(fixture);
  const model = buildModel(records);
  assert.deepEqual(model.headline.machines.map((m) => [m.label, m.verdict.status]),
                   [["no GPU, 2 CPUs", "slower"], ["H200, 16 CPUs", "goals-fail"]]);
  assert.equal(new Set(model.points.map((p) => p.machine)).size, 2);  // host and CPU model strings vary
  const [box, h200] = model.headline.machines;
  assert.equal(box.verdict.slower[0].name, "tiny warm disk hit");
  assert.equal(box.verdict.load.underLoad, true);
  assert.equal(h200.verdict.load.known, false);
  const html = renderHeadline(model.headline);
  assert.equal((html.match(/<li class="verdict verdict-slower" data-machine="no GPU, 2 CPUs"/g) ?? []).length, 1);
  // The H200 is within its noise band but fails a goal: not "still fast".
  assert.equal((html.match(/<li class="verdict verdict-goals-fail" data-machine="H200, 16 CPUs"/g) ?? []).length, 1);
  assert.match(html, /slower by 126% \(beyond its noise band\): tiny warm disk hit 41\.1 µs/);
  assert.doesNotMatch(html, /still fast/);
  assert.match(html, /within the noise band of the previous runs, but 1 goal fails: tiny hit \+ load &lt;= 1\.20x/);
  // The box's failed disk-hit goal is a regression under load; the H200's failed hit-path goal is noise.
  assert.match(html, /data-load="under">previous 4 here: [^<]*worse beyond its noise band[^<]*under load</);
  assert.match(html, /data-load="unknown">previous 4 here: [^<]*within its noise band · load unknown</);
});

test("machines: the run just made comes first with its own verdict; another machine of its description stays apart", () => {
  const { records } = readHistory(fixture);
  const mine = record("new", "fresh-clone", "", { tiny: { warm_disk_us: 9, cold_ms: 300 } });
  mine.machine.cpus = 2;
  mine.machine.id = "3f9a2c1b77aa0011";
  mine.date = "2025-01-01T00:00:00+00:00";  // older than the committed runs: first all the same
  const current = machineName(mine);
  assert.equal(current, "no GPU, 2 CPUs · 3f9a2c1b");
  const model = buildModel([...records, mine], { current });
  const [first, ...others] = model.headline.machines;
  assert.equal(first.label, current);
  assert.equal(first.current, true);
  assert.equal(first.verdict.status, "baseline");
  assert.match(first.verdict.text, /^first run: baseline recorded/);
  // The committed runs of "no GPU, 2 CPUs" (no id) keep their own line and verdict.
  assert.deepEqual(others.map((m) => [m.label, m.verdict.status]), [["no GPU, 2 CPUs", "slower"], ["H200, 16 CPUs", "goals-fail"]]);
  const html = renderHeadline(model.headline);
  assert.match(html, /data-current="yes"[^>]*><b>no GPU, 2 CPUs · 3f9a2c1b<\/b> \(this machine, the run just made\)/);
  assert.ok(html.indexOf("Other machines") > html.indexOf("this machine, the run just made"));
});

test("goals: a value shows the decimals its goal is judged at, never rounded onto the target", () => {
  const { fmtAgainst } = format;
  assert.equal(fmtAgainst(1.083, 1.08), "1.083");
  assert.equal(fmtAgainst(1.0649, 1.08), "1.06");
  assert.equal(fmtAgainst(1.08, 1.08), "1.08");
  assert.equal(fmtAgainst(20.004, 20), "20.004");
  assert.equal(fmtAgainst(16666.67, 1000), "16,667");
  const goal = { goal: "mdspan50 hit + load <= 1.08x bare load", value: 1.083, target: 1.08, status: "fail" };
  const html = renderHeadline(buildModel([record("a", "box", "H200", { mdspan50: { warm_disk_us: 80 } }, { goals: [goal] })]).headline);
  assert.match(html, /<b>fail<\/b> 1\.083/);
  assert.doesNotMatch(html, /<b>fail<\/b> 1\.08[^0-9]/);
});

// The real browser (Debian's chromium through playwright-core, as ci/test.sh's
// dashboard_browser_test): a one-run history as a fresh clone's first `ci/bench.sh` draws it.
test("browser: a first run on a fresh machine is first, 'baseline recorded', every point mid-chart, dashes only for goals", (t) => {
  const chromium = process.env.CUBBY_CHROMIUM || "/usr/bin/chromium";
  const dashboard = path.join(root, "bench", "dashboard");
  if (!fs.existsSync(chromium) || !fs.existsSync(path.join(dashboard, "node_modules", "playwright-core")) ||
      !fs.existsSync(path.join(dashboard, "node_modules", "chart.js"))) {
    t.skip("no chromium or no npm packages in bench/dashboard (npm ci there; ci/test.sh installs both)");
    return;
  }
  const current = path.join(root, "tests", "bench", "fixtures", "dashboard-current.jsonl");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-test-dashboard-browser-"));
  try {
    const page = path.join(dir, "dashboard.html");
    const build = spawnSync(process.execPath, [path.join(dashboard, "build.mjs"), "--history", current, "--out", page,
                                               "--current", current], { encoding: "utf8" });
    assert.equal(build.status, 0, build.stderr);
    const run = spawnSync(process.execPath, [path.join(dashboard, "test", "browser.mjs"), page, path.join(dir, "shot.png"),
                                             "--expect-current", "no GPU, 2 CPUs · c0ffee12",
                                             "--expect-verdict", "no GPU, 2 CPUs · c0ffee12=baseline"],
                          { encoding: "utf8", timeout: 120000 });
    assert.equal(run.status, 0, run.stdout.split("\n").filter((l) => l.startsWith("FAIL")).join("\n") + run.stderr);
    assert.match(run.stdout, /ok   times-tiny: every point inside the plot, clear of its edges/);
    assert.match(run.stdout, /ok   times-tiny: dashed lines are goals and thresholds only/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
