// Builds cubby's benchmark dashboard: one static HTML file, Chart.js inlined, that opens offline.
//
//   node build.mjs [--history ../results/history.jsonl] [--out ../out/dashboard.html]
//
// Reads the history (one results.json record a line, written by bench/tools/bench_report.py).
// A missing history gives a page that says so; lines that do not parse, or records of another
// schema, are skipped and counted (shown on the page and on stderr). Exit status 0, or 1 when
// Chart.js is not installed (run `npm ci` here first).
//
// The page draws, per workload: cold vs warm time over commits, speedup over cold, the
// hit-path overhead over cuModuleLoadData and, where measured, the cold suite's variants
// (BM_ColdSuite: serial, pch, parallel:N, parallel_pch:N) with their speedup over serial; then
// name-recovery accuracy and the whole-suite runs (cold, warm, after a header edit). Each point's tooltip names its commit, date, machine and GPU. Datasets are split
// by machine. The regression threshold (REGRESSION_FACTOR x the median warm disk hit of that
// machine) is drawn dashed, and points above it are red.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const REGRESSION_FACTOR = 1.5;
const RESULTS_SCHEMA = 1;

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

// The records of the history and how many lines were skipped (with the reasons).
export function readHistory(file) {
  const records = [];
  const problems = [];
  let text;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    problems.push(`no history at ${file} (${error.code ?? error.message}): run ci/bench.sh to start one`);
    return { records, problems, skipped: 0 };
  }
  let skipped = 0;
  text.split("\n").forEach((line, index) => {
    if (!line.trim()) return;
    let record;
    try {
      record = JSON.parse(line);
    } catch {
      skipped += 1;
      problems.push(`${path.basename(file)}:${index + 1}: not JSON; skipped`);
      return;
    }
    if (!record || typeof record !== "object" || record.schema !== RESULTS_SCHEMA ||
        typeof record.workloads !== "object" || record.workloads === null) {
      skipped += 1;
      problems.push(`${path.basename(file)}:${index + 1}: not a schema ${RESULTS_SCHEMA} results record; skipped`);
      return;
    }
    records.push(record);
  });
  return { records, problems, skipped };
}

function machineOf(record) {
  const m = record.machine ?? {};
  const gpu = m.gpu_name || (m.gpu ? "GPU" : "no GPU");
  return `${m.host ?? "?"} (${gpu})`;
}

// BM_ColdSuite variants in display order: serial, pch, parallel:N, parallel_pch:N (N ascending).
export function coldSuiteOrder(a, b) {
  const kinds = ["serial", "pch", "parallel", "parallel_pch"];
  const key = (variant) => {
    const [kind, jobs] = variant.split(":");
    const rank = kinds.indexOf(kind);
    return [rank < 0 ? kinds.length : rank, Number(jobs ?? 0) || 0];
  };
  const [ka, kb] = [key(a), key(b)];
  return ka[0] - kb[0] || ka[1] - kb[1] || a.localeCompare(b);
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  if (!sorted.length) return null;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// Chart specs (plain data; the page turns them into Chart.js charts).
export function buildModel(records) {
  const labels = records.map((r, i) => `${i + 1}: ${String(r.commit ?? "?").slice(0, 12)}`);
  const points = records.map((r) => ({
    commit: r.commit ?? "?", date: r.date ?? "?", machine: machineOf(r),
    arch: r.machine?.arch ?? "?", nvrtc: r.machine?.nvrtc ?? "?",
  }));
  const machines = [...new Set(points.map((p) => p.machine))];
  const series = (pick, machine) =>
    records.map((r, i) => (points[i].machine === machine ? (pick(r) ?? null) : null));
  const hasData = (values) => values.some((v) => typeof v === "number" && Number.isFinite(v));
  const workloads = [...new Set(records.flatMap((r) => Object.keys(r.workloads)))];
  const charts = [];

  for (const name of workloads) {
    const w = (r) => r.workloads?.[name] ?? {};
    const times = [];
    const thresholds = [];
    for (const machine of machines) {
      const add = (label, pick, extra = {}) => {
        const data = series(pick, machine);
        const dataset = { label: `${label} @ ${machine}`, data, ...extra };
        if (hasData(data)) times.push(dataset);
        return dataset;
      };
      add("cold compile", (r) => (w(r).cold_ms != null ? w(r).cold_ms * 1000 : null));
      add("warm hit, memory", (r) => w(r).warm_memory_us);
      const disk = add("warm hit, disk", (r) => w(r).warm_disk_us, { kind: "guarded" });
      add("warm hit + load", (r) => w(r).warm_loaded_us);
      add("cuModuleLoadData baseline", (r) => w(r).load_baseline_us);
      const med = median(disk.data.filter((v) => typeof v === "number"));
      if (med != null) {
        disk.limitOf = med * REGRESSION_FACTOR;
        thresholds.push({
          label: `regression threshold, warm disk (${REGRESSION_FACTOR}x median) @ ${machine}`,
          data: labels.map(() => med * REGRESSION_FACTOR), kind: "threshold",
        });
      }
    }
    charts.push({ id: `times-${name}`, section: name, title: `${name}: cold vs warm (us, log scale)`,
                  log: true, datasets: [...times, ...thresholds] });

    const speedups = [];
    for (const machine of machines) {
      for (const [label, field] of [["disk hit vs cold", "speedup_disk"], ["memory hit vs cold", "speedup_memory"],
                                    ["hit + load vs cold", "speedup_loaded"]]) {
        const data = series((r) => w(r)[field], machine);
        if (hasData(data)) speedups.push({ label: `${label} @ ${machine}`, data });
      }
    }
    if (name === "mdspan50" && speedups.length) {
      speedups.push({ label: "goal: disk hit >= 1000x", data: labels.map(() => 1000), kind: "goal" });
    }
    charts.push({ id: `speedup-${name}`, section: name, title: `${name}: speedup over cold (x, log scale)`,
                  log: true, datasets: speedups });

    const overhead = [];
    for (const machine of machines) {
      const data = series((r) => w(r).ratio_vs_load_baseline, machine);
      if (hasData(data)) overhead.push({ label: `(hit + load) / load baseline @ ${machine}`, data, kind: "guarded", limitOf: 1.15 });
    }
    if (overhead.length) {
      overhead.push({ label: "goal: <= 1.15x cuModuleLoadData", data: labels.map(() => 1.15), kind: "threshold" });
    }
    charts.push({ id: `overhead-${name}`, section: name,
                  title: `${name}: hit-path overhead over cuModuleLoadData (x; GPU runs only)`,
                  log: false, datasets: overhead });

    // The cold suite's variants (charted only for workloads that have them).
    const variants = [...new Set(records.flatMap((r) => Object.keys(w(r).cold_suite ?? {})))].sort(coldSuiteOrder);
    if (variants.length) {
      const suiteTimes = [];
      const suiteSpeedups = [];
      for (const machine of machines) {
        for (const variant of variants) {
          const row = (r) => w(r).cold_suite?.[variant] ?? {};
          const data = series((r) => (row(r).ms != null ? row(r).ms / 1000 : null), machine);
          if (hasData(data)) suiteTimes.push({ label: `${variant} @ ${machine}`, data });
          if (variant === "serial") continue;
          const speedup = series((r) => row(r).speedup_vs_serial, machine);
          if (hasData(speedup)) suiteSpeedups.push({ label: `${variant} vs serial @ ${machine}`, data: speedup });
        }
      }
      charts.push({ id: `cold-suite-${name}`, section: name,
                    title: `${name}: cold suite, serial / pch / parallel:N workers (s)`, log: false, datasets: suiteTimes });
      charts.push({ id: `cold-suite-speedup-${name}`, section: name,
                    title: `${name}: cold suite, speedup over serial (x)`, log: false, datasets: suiteSpeedups });
    }
  }

  const recovery = [];
  const methods = new Set();
  records.forEach((r) => Object.entries(r.recovery ?? {}).forEach(([wl, ms]) =>
    Object.keys(ms ?? {}).forEach((m) => methods.add(`${wl}/${m}`))));
  for (const key of [...methods].sort()) {
    const [wl, ...rest] = key.split("/");
    const method = rest.join("/");
    for (const machine of machines) {
      const data = series((r) => {
        const v = r.recovery?.[wl]?.[method];
        return typeof v === "number" ? v * 100 : null;
      }, machine);
      if (hasData(data)) recovery.push({ label: `${key} @ ${machine}`, data });
    }
  }
  charts.push({ id: "recovery", section: "name recovery", title: "name-recovery accuracy (%): cubby vs baseline",
                log: false, datasets: recovery });

  const suite = [];
  const suites = [...new Set(records.flatMap((r) => Object.keys(r.suite ?? {})))];
  for (const s of suites) {
    for (const machine of machines) {
      for (const [label, field] of [["1st run (cold)", "cold_s"], ["2nd run (warm)", "warm_s"],
                                    ["after a header edit (prefetch)", "edit_s"],
                                    ["after a header edit (no prefetch)", "edit_serial_s"]]) {
        const data = series((r) => r.suite?.[s]?.[field], machine);
        if (hasData(data)) suite.push({ label: `${s} ${label} @ ${machine}`, data });
      }
    }
  }
  charts.push({ id: "suite", section: "whole suite",
                title: "whole suite: 1st run (cold), 2nd run (warm), after a header edit (manifest kept), seconds",
                log: true, datasets: suite });

  // The remote tier: a fresh store's first run, served by Redis, against a local warm run.
  const fleet = [];
  for (const machine of machines) {
    const add = (label, pick, extra = {}) => {
      const data = series(pick, machine);
      if (hasData(data)) fleet.push({ label: `${label} @ ${machine}`, data, ...extra });
    };
    for (const s of suites) {
      add(`${s} (whole process)`, (r) => r.suite?.[s]?.fleet_over_warm, { kind: "guarded", limitOf: 1.5 });
    }
    for (const name of workloads) {
      add(`${name} + module loads`, (r) => r.workloads?.[name]?.fleet_loaded_ratio_vs_local_warm,
          { kind: "guarded", limitOf: 1.5 });
      add(`${name} lookups only`, (r) => r.workloads?.[name]?.fleet_ratio_vs_local_warm);
    }
  }
  if (fleet.length) {
    fleet.push({ label: "goal: <= 1.5x a local warm run", data: labels.map(() => 1.5), kind: "threshold" });
  }
  charts.push({ id: "fleet", section: "remote tier",
                title: "fleet first run (fresh store served by Redis) / local warm run (x, log scale)",
                log: true, datasets: fleet });
  return { labels, points, charts, generated: new Date().toISOString(), regressionFactor: REGRESSION_FACTOR };
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

// The page's own script: draws the charts of window.CUBBY_MODEL and sets window.cubbyDashboard.
const PAGE_SCRIPT = String.raw`
(function () {
  const model = window.CUBBY_MODEL;
  const palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
  const charts = [];
  for (const spec of model.charts) {
    const box = document.getElementById("box-" + spec.id);
    if (!spec.datasets.length) continue;
    const canvas = document.createElement("canvas");
    canvas.id = spec.id;
    box.appendChild(canvas);
    let color = 0;
    const datasets = spec.datasets.map((d) => {
      const base = { label: d.label, data: d.data, spanGaps: true, borderWidth: 2, pointRadius: 3 };
      if (d.kind === "threshold" || d.kind === "goal") {
        return Object.assign(base, { borderColor: d.kind === "goal" ? "#2ca02c" : "#d62728", borderDash: [6, 4],
                                     pointRadius: 0, borderWidth: 1.5, fill: false });
      }
      const c = palette[color++ % palette.length];
      const limits = d.kind === "guarded" && d.limitOf != null
        ? d.data.map((v) => (v != null && v > d.limitOf ? "#d62728" : c))
        : c;
      return Object.assign(base, { borderColor: c, backgroundColor: limits, pointBackgroundColor: limits, pointBorderColor: limits });
    });
    const chart = new Chart(canvas, {
      type: "line",
      data: { labels: model.labels, datasets },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        interaction: { mode: "nearest", intersect: false },
        scales: { y: { type: spec.log ? "logarithmic" : "linear" }, x: { ticks: { maxRotation: 60 } } },
        plugins: {
          title: { display: true, text: spec.title },
          legend: { position: "bottom", labels: { boxWidth: 12 } },
          tooltip: { callbacks: { afterLabel: (item) => {
            const p = model.points[item.dataIndex];
            return "commit " + p.commit + "\n" + p.date + "\nmachine " + p.machine + "\narch " + p.arch + ", NVRTC " + p.nvrtc;
          } } },
        },
      },
    });
    charts.push({ id: spec.id, chart });
  }
  window.cubbyDashboard = {
    ready: true,
    expected: model.charts.filter((s) => s.datasets.length).map((s) => s.id),
    charts: charts.map((c) => ({ id: c.id, points: c.chart.data.datasets.reduce(
      (n, d) => n + d.data.filter((v) => typeof v === "number").length, 0) })),
  };
})();
`;

export function renderPage(model, problems, chartJs) {
  const sections = [...new Set(model.charts.map((c) => c.section))];
  const body = sections.map((section) => {
    const boxes = model.charts.filter((c) => c.section === section).map((c) => c.datasets.length
      ? `<div class="chart" id="box-${escapeHtml(c.id)}"></div>`
      : `<div class="empty" id="box-${escapeHtml(c.id)}"><b>${escapeHtml(c.title)}</b><br>no data yet</div>`).join("\n");
    return `<h2>${escapeHtml(section)}</h2>\n<div class="grid">\n${boxes}\n</div>`;
  }).join("\n");
  const last = model.points.at(-1);
  const notes = problems.length
    ? `<div class="problems"><b>History problems</b><ul>${problems.slice(0, 20).map((p) => `<li>${escapeHtml(p)}</li>`).join("")}</ul></div>`
    : "";
  // JSON inside <script>: escape "<" so no "</script>" can close the element early.
  const json = JSON.stringify(model).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>cubby benchmarks</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 1em; }
.chart { position: relative; height: 360px; border: 1px solid #ddd; border-radius: 6px; padding: 6px; }
.empty { height: 80px; border: 1px dashed #bbb; border-radius: 6px; padding: 10px; color: #777; }
.problems { background: #fff4e5; border: 1px solid #f0b37e; padding: 0.5em 1em; border-radius: 6px; }
</style></head>
<body>
<h1>cubby benchmarks</h1>
<p>${model.points.length} runs in the history${last ? `; latest: commit <code>${escapeHtml(last.commit)}</code> on ${escapeHtml(last.machine)}, ${escapeHtml(last.date)}` : ""}.
Red points lie above the regression threshold (${model.regressionFactor}x the machine's median warm disk hit) or the 1.15x load-overhead goal.
Generated ${escapeHtml(model.generated)} by bench/dashboard/build.mjs.</p>
${notes}
${body}
<script>${chartJs}</script>
<script>window.CUBBY_MODEL = ${json};</script>
<script>${PAGE_SCRIPT}</script>
</body></html>
`;
}

function main() {
  const history = path.resolve(arg("--history", path.join(here, "..", "results", "history.jsonl")));
  const out = path.resolve(arg("--out", path.join(here, "..", "out", "dashboard.html")));
  const chartFile = path.join(here, "node_modules", "chart.js", "dist", "chart.umd.min.js");
  let chartJs;
  try {
    chartJs = fs.readFileSync(chartFile, "utf8");
  } catch {
    console.error(`[dashboard] Chart.js is not installed (${chartFile} missing): run \`npm ci\` in ${here}`);
    return 1;
  }
  const { records, problems } = readHistory(history);
  for (const p of problems) console.error(`[dashboard] ${p}`);
  const model = buildModel(records);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, renderPage(model, problems, chartJs.replace(/<\/script/gi, "<\\/script")));
  const drawn = model.charts.filter((c) => c.datasets.length).length;
  console.error(`[dashboard] wrote ${out}: ${records.length} runs, ${drawn} of ${model.charts.length} charts with data`);
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main();
}
