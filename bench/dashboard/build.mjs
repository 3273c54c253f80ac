// Builds cubby's benchmark dashboard: one static HTML file, Chart.js inlined, that opens offline.
//
//   node build.mjs [--history ../results/history.jsonl] [--out ../out/dashboard.html]
//                  [--current ../out/history-line.jsonl]
//
// --current: the record(s) of the run just made (also in the history): its machine comes first
// in the headline, marked as this machine, its verdict from its own earlier runs only.
//
// Reads the history (one results.json record a line, written by bench/tools/bench_report.py).
// A missing history gives a page that says so; lines that do not parse, or records of another
// schema, are skipped and counted (shown on the page and on stderr). Exit status 0, or 1 when
// Chart.js is not installed (run `npm ci` here first).
//
// The page opens with the headline (headline.mjs): a verdict line per machine (verdict.mjs: the
// latest run against the previous runs of the same machine, "still fast" or "slower by X% (beyond
// its noise band)", and its load), the latest run of every machine, and every goal with its
// status (a failed one with its spread over the previous runs and the run's load). Then, per
// workload: cold vs warm time over commits, speedup over cold, the hit path over the bare load
// (BM_HitVsLoad's interleaved median with its p10-p90 band; the old ratio of two separate
// families in grey; a ratio below 1.0 is a measurement fault, marked on the 1.0 line and never
// drawn as a value) and, where measured, the cold suite's variants (BM_ColdSuite: serial, pch,
// parallel:N, parallel_pch:N) with their speedup over serial; then name-recovery accuracy (one bar
// chart: cubby vs the baseline per corpus, latest run), the whole-suite runs (cold, warm, after a
// header edit), hit rate and compile time saved over time, and the remote tier. Each point's
// tooltip names its commit, date, machine, GPU and host. Datasets are split by machine, one
// identity per machine (machines.mjs: its label, else its description and id), so a machine's line
// runs through all its runs. Dashed lines are goals and thresholds, nothing else: the regression
// threshold (REGRESSION_FACTOR x the median warm disk hit of that machine) is drawn dashed, and
// points above it are red; machines differ by point shape. X labels are short (commit, day) and Chart.js rotates
// and thins them so they never overlap; the legibility rules of the charts (legends, axes, y
// labels) are in PAGE_SCRIPT's comment.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { escapeHtml } from "./format.mjs";
import { buildHeadline, hitLoadRatio, renderHeadline } from "./headline.mjs";
import { gpuModel, machineName } from "./machines.mjs";

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

// The x label of a record: its commit (7 digits, "*" when dirty) and day.
export function runLabel(record) {
  const commit = String(record.commit ?? "?");
  const day = /^\d{4}-(\d\d-\d\d)/.exec(String(record.date ?? ""))?.[1];
  return `${commit.replace(/-dirty$/, "").slice(0, 7)}${commit.endsWith("-dirty") ? "*" : ""}${day ? ` ${day}` : ""}`;
}

// Hit-path goals (bench/tools/hit_vs_load.py GOALS): the highest median ratio that passes.
export const HIT_LOAD_GOALS = { "mdspan50": 1.08, "mdspan-suite": 1.08, "tiny": 1.2 };

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
export function buildModel(records, { current = null } = {}) {
  const machineOf = machineName;
  const labels = records.map(runLabel);
  const points = records.map((r) => ({
    commit: r.commit ?? "?", date: r.date ?? "?", machine: machineOf(r),
    gpu: gpuModel(r.machine), cpus: r.machine?.cpus ?? null, cpu: r.machine?.cpu_model ?? "", id: String(r.machine?.id ?? ""), named: Boolean(String(r.machine?.label ?? "").trim()),
    host: r.machine?.host ?? "", arch: r.machine?.arch ?? "?", nvrtc: r.machine?.nvrtc ?? "?",
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
      add("hit + load, interleaved (median)", (r) => w(r).hit_load_us);
      add("bare load, interleaved (median)", (r) => w(r).bare_load_us);
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

    charts.push({ id: `overhead-${name}`, section: name,
                  title: `${name}: hit + load / bare load (x; GPU runs only): median and p10–p90 of interleaved pairs`,
                  log: false, datasets: hitLoadDatasets(records, machines, series, labels, name) });

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

  charts.push(recoveryChart(records));

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
  charts.push(...savingsCharts(records, machines, series, workloads, suites));

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
  return { labels, points, charts, headline: buildHeadline(records, machineOf, current),
           generated: new Date().toISOString(), regressionFactor: REGRESSION_FACTOR };
}

// The hit path over the bare load of one workload, per machine: BM_HitVsLoad's median with its
// p10-p90 band (two band datasets, the upper one filled down to the lower one), the old ratio of
// two separately measured families (grey, no goal), and every ratio below 1.0 as a fault marker on
// the 1.0 line (its value in `faults`, for the tooltip), never as a value.
function hitLoadDatasets(records, machines, series, labels, name) {
  const datasets = [];
  const ratio = (r) => hitLoadRatio(r.workloads?.[name]);
  const hasData = (values) => values.some((v) => typeof v === "number");
  for (const machine of machines) {
    const median = series((r) => (ratio(r)?.method === "interleaved" && !ratio(r).fault ? ratio(r).value : null), machine);
    if (hasData(median)) {
      const band = (pick) => series((r) => (ratio(r)?.method === "interleaved" && !ratio(r).fault ? pick(ratio(r)) : null), machine);
      datasets.push({ label: `p10 @ ${machine}`, data: band((x) => x.p10), kind: "band-low" });
      datasets.push({ label: `p10–p90 @ ${machine}`, data: band((x) => x.p90), kind: "band-high" });
      datasets.push({ label: `median (BM_HitVsLoad) @ ${machine}`, data: median, kind: "guarded",
                      limitOf: HIT_LOAD_GOALS[name] ?? null });
    }
    const apart = series((r) => (ratio(r)?.method === "separate" && !ratio(r).fault ? ratio(r).value : null), machine);
    if (hasData(apart)) {
      datasets.push({ label: `old: BM_WarmHitLoaded / BM_ModuleLoadBaseline, measured apart @ ${machine}`,
                      data: apart, kind: "old" });
    }
  }
  const faults = records.map((r) => (ratio(r)?.fault ? ratio(r).value : null));
  if (hasData(faults)) {
    datasets.push({ label: "measurement fault (ratio < 1.0: not a result)", data: faults.map((v) => (v == null ? null : 1)),
                    faults, kind: "fault" });
  }
  if (datasets.length && HIT_LOAD_GOALS[name] != null) {
    datasets.push({ label: `goal: <= ${HIT_LOAD_GOALS[name].toFixed(2)}x`, data: labels.map(() => HIT_LOAD_GOALS[name]),
                    kind: "threshold" });
  }
  return datasets;
}

// Name recovery as one bar chart: per corpus, cubby (its matcher) against the baseline (demangle,
// strip, compare text), from the latest record that has them.
export function recoveryChart(records) {
  const latest = [...records].reverse().find((r) => Object.keys(r.recovery ?? {}).length);
  const chart = { id: "recovery", section: "name recovery", type: "bar", log: false, datasets: [],
                  title: "name-recovery accuracy (%): cubby vs baseline per corpus" };
  if (!latest) return chart;
  const corpora = Object.keys(latest.recovery).sort();
  chart.labels = corpora;
  chart.title += ` (commit ${runLabel(latest)})`;
  for (const [label, method] of [["cubby (matcher)", "matcher"], ["baseline (demangle, strip, compare text)", "baseline"]]) {
    const data = corpora.map((c) => (typeof latest.recovery[c]?.[method] === "number" ? latest.recovery[c][method] * 100 : null));
    if (data.some((v) => v != null)) chart.datasets.push({ label, data });
  }
  return chart;
}

// Hit rate and compile time saved over time. Hit rate: the whole-suite runs' lookups that hit
// ({run}_hits / ({run}_hits + {run}_misses), recorded where whole_suite.py read the store's
// stats). Compile time saved (s): per whole suite, the cold run minus the warm run, and the
// compile time its warm run's hits saved (warm_compile_saved_s, from the store's stats); per
// workload, what one warm lookup saves (cold compile minus disk hit).
function savingsCharts(records, machines, series, workloads, suites) {
  const hasData = (values) => values.some((v) => typeof v === "number" && Number.isFinite(v));
  const rate = [];
  const saved = [];
  for (const machine of machines) {
    for (const s of suites) {
      for (const [run, label] of [["warm", "2nd run (warm)"], ["edit", "after a header edit (prefetch)"],
                                  ["edit_serial", "after a header edit (no prefetch)"]]) {
        const data = series((r) => {
          const x = r.suite?.[s] ?? {};
          const hits = x[`${run}_hits`];
          const lookups = hits + x[`${run}_misses`];
          return typeof hits === "number" && lookups > 0 ? (100 * hits) / lookups : null;
        }, machine);
        if (hasData(data)) rate.push({ label: `${s} ${label} @ ${machine}`, data });
      }
      const whole = series((r) => {
        const x = r.suite?.[s];
        return typeof x?.cold_s === "number" && typeof x?.warm_s === "number" ? x.cold_s - x.warm_s : null;
      }, machine);
      if (hasData(whole)) saved.push({ label: `${s} whole run @ ${machine}`, data: whole });
      const byHits = series((r) => r.suite?.[s]?.warm_compile_saved_s, machine);
      if (hasData(byHits)) saved.push({ label: `${s} warm run's hits (stats) @ ${machine}`, data: byHits });
    }
    for (const name of workloads) {
      const data = series((r) => {
        const w = r.workloads?.[name] ?? {};
        return typeof w.cold_ms === "number" && typeof w.warm_disk_us === "number" ? w.cold_ms / 1e3 - w.warm_disk_us / 1e6 : null;
      }, machine);
      if (hasData(data)) saved.push({ label: `${name} lookup @ ${machine}`, data });
    }
  }
  return [
    { id: "hit-rate", section: "hit rate and time saved", log: false, datasets: rate, yMin: 0, yMax: 100,
      title: "hit rate of the whole-suite runs (% of lookups that hit)" },
    { id: "time-saved", section: "hit rate and time saved", log: true, datasets: saved,
      title: "compile time saved (s, log): whole run = cold − warm run; lookup = cold compile − disk hit" },
  ];
}

// The page's own script: draws the charts of window.CUBBY_MODEL and sets window.cubbyDashboard.
//
// Legibility rules: a series keeps its colour on every machine and a machine its point shape
// (lines are solid: a dash means a goal or threshold), so the legend (HTML, under the chart, never clipped by the canvas) lists each series and
// each machine once, and becomes a table (series x machine) beyond LEGEND_ITEMS entries; log axes
// span whole decades with labels thinned to what the height holds (1, 2, 5 per decade, else
// decades); linear axes start at zero unless the chart draws its noise band; lines span the runs
// that did not measure them, so a machine's trend reaches its latest run; each run sits in the
// middle of its slot on the x axis (offset), so one run is a visible point mid-chart, drawn larger.
const PAGE_SCRIPT = String.raw`
(function () {
  const model = window.CUBBY_MODEL;
  const LEGEND_ITEMS = 12;
  const palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22",
                   "#393b79", "#637939", "#e7ba52", "#843c39", "#5254a3", "#d6616b", "#7b4173"];
  const machines = [...new Set(model.points.map((p) => p.machine))];
  const dashes = [[]];  // solid for every machine: dashes mean goals and thresholds
  const shapes = ["circle", "rect", "triangle", "rectRot"];
  const escape = (text) => String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  // A dataset's series (its label without " @ machine"; the band's two edges are one series) and machine.
  const split = (d) => {
    const at = d.label.lastIndexOf(" @ ");
    const machine = at >= 0 ? d.label.slice(at + 3) : null;
    const series = d.kind === "band-low" ? "p10–p90" : at >= 0 ? d.label.slice(0, at) : d.label;
    return { series, machine };
  };
  const fmtTick = (v) => (v >= 1 ? v.toLocaleString("en-US") : String(Number(v.toPrecision(2))));

  // A legend swatch: a short line in the series' style with its point shape.
  function swatch(style) {
    const dash = style.dash && style.dash.length ? ' stroke-dasharray="' + style.dash.join(" ") + '"' : "";
    let mark = "";
    const c = style.color;
    if (style.fill) return '<svg class="swatch" width="30" height="12"><rect x="1" y="2" width="28" height="8" fill="' + c +
                           (style.solid ? "" : "33") + '" stroke="' + c + (style.solid ? "" : "88") + '"/></svg>';
    if (style.cross) mark = '<path d="M11 2 L19 10 M19 2 L11 10" stroke="' + c + '" stroke-width="2.5"/>';
    else if (style.shape === "rect") mark = '<rect x="12" y="3" width="6" height="6" fill="' + c + '"/>';
    else if (style.shape === "triangle") mark = '<polygon points="15,2 19,10 11,10" fill="' + c + '"/>';
    else if (style.shape === "rectRot") mark = '<polygon points="15,1.5 19.5,6 15,10.5 10.5,6" fill="' + c + '"/>';
    else if (style.shape === "circle") mark = '<circle cx="15" cy="6" r="3" fill="' + c + '"/>';
    const line = style.cross ? "" : '<line x1="1" y1="6" x2="29" y2="6" stroke="' + c + '" stroke-width="2"' + dash + "/>";
    return '<svg class="swatch" width="30" height="12">' + line + mark + "</svg>";
  }

  // The legend of one chart: an entry per series (its colour) and per machine (its dash and
  // shape); a table of series x machines when there are more than LEGEND_ITEMS entries. A click
  // on an entry hides or shows its datasets.
  function legend(chart, box) {
    const groups = new Map();
    const byMachine = new Map();
    chart.data.datasets.forEach((d, i) => {
      const { series, machine } = split(d);
      if (!groups.has(series)) groups.set(series, { indexes: [], machines: new Map(), style: d.legendStyle });
      const g = groups.get(series);
      g.indexes.push(i);
      if (machine != null && d.kind !== "threshold") {
        if (!g.machines.has(machine)) g.machines.set(machine, []);
        g.machines.get(machine).push(i);
        if (d.legendStyle.lined) {
          if (!byMachine.has(machine)) byMachine.set(machine, []);
          byMachine.get(machine).push(i);
        }
      }
    });
    const element = document.createElement("div");
    element.className = "legend";
    element.id = "legend-" + box.id.slice(4);
    const entries = [];  // [element, dataset indexes]
    const machineStyle = (m) => ({ color: "#555", dash: dashes[machines.indexOf(m) % dashes.length],
                                   shape: shapes[machines.indexOf(m) % shapes.length] });
    if (groups.size + byMachine.size <= LEGEND_ITEMS) {
      const add = (label, style, indexes, kind) => {
        const item = document.createElement("span");
        item.className = "item " + kind;
        item.innerHTML = swatch(style) + "<span>" + escape(label) + "</span>";
        element.appendChild(item);
        entries.push([item, indexes]);
      };
      for (const [series, g] of groups) add(series, g.style, g.indexes, "series");
      for (const [machine, indexes] of byMachine) add(machine, machineStyle(machine), indexes, "machine");
    } else {
      element.classList.add("as-table");
      const cols = [...byMachine.keys()];
      const table = document.createElement("table");
      table.innerHTML = "<thead><tr><th>series</th>" +
        cols.map((m) => "<th>" + swatch(machineStyle(m)) + " " + escape(m) + "</th>").join("") + "</tr></thead>";
      const body = document.createElement("tbody");
      for (const [series, g] of groups) {
        const row = document.createElement("tr");
        row.className = "item series";
        const cells = g.machines.size && cols.length
          ? cols.map((m) => "<td>" + (g.machines.has(m) ? swatch(Object.assign({}, g.style, { dash: machineStyle(m).dash,
                                                                                               shape: g.style.shape && machineStyle(m).shape }))
                                                         : "") + "</td>").join("")
          : '<td colspan="' + Math.max(1, cols.length) + '">' + swatch(g.style) + "</td>";
        row.innerHTML = "<th>" + escape(series) + "</th>" + cells;
        body.appendChild(row);
        entries.push([row, g.indexes]);
      }
      table.appendChild(body);
      element.appendChild(table);
    }
    for (const [item, indexes] of entries) {
      item.addEventListener("click", () => {
        const show = !chart.isDatasetVisible(indexes[0]);
        for (const i of indexes) chart.setDatasetVisibility(i, show);
        item.classList.toggle("hidden", !show);
        chart.update();
      });
    }
    box.appendChild(element);
    return groups.size + byMachine.size;
  }

  // Log axes: whole decades around the data, labels at 1, 2 and 5 per decade when the height holds
  // them, else at every decade (or every other one ...) with room for one line of text.
  function decades(datasets) {
    const values = datasets.flatMap((d) => d.data).filter((v) => typeof v === "number" && v > 0);
    if (!values.length) return {};
    const lo = Math.floor(Math.log10(Math.min(...values)) + 1e-9);
    const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(...values)) - 1e-9));
    return { min: Math.pow(10, lo), max: Math.pow(10, hi) };
  }
  function logTicks(scale) {
    const lo = Math.round(Math.log10(scale.min));
    const hi = Math.round(Math.log10(scale.max));
    const room = Chart.helpers.toFont(scale.options.ticks.font).lineHeight * 1.25;
    const perDecade = scale.height > 0 ? scale.height / Math.max(1, hi - lo) : 0;
    const mantissas = perDecade * Math.log10(2) >= room ? [1, 2, 5] : [1];
    const every = perDecade > 0 ? Math.max(1, Math.ceil(room / perDecade)) : Math.max(1, hi - lo);
    const ticks = [];
    for (let e = lo; e <= hi; e += 1) {
      if ((e - lo) % every) continue;
      for (const m of mantissas) {
        const v = Number((m * Math.pow(10, e)).toPrecision(6));
        if (v <= scale.max * 1.000001) ticks.push({ value: v });
      }
    }
    scale.ticks = ticks;
  }

  const charts = [];
  for (const spec of model.charts) {
    const box = document.getElementById("box-" + spec.id);
    if (!spec.datasets.length) continue;
    const plot = document.createElement("div");
    plot.className = "plot";
    const canvas = document.createElement("canvas");
    canvas.id = spec.id;
    plot.appendChild(canvas);
    box.appendChild(plot);
    const bar = spec.type === "bar";
    const colors = new Map();
    const datasets = spec.datasets.map((d) => {
      const single = d.data.filter((v) => typeof v === "number").length === 1;
      const base = { label: d.label, data: d.data, spanGaps: true, borderWidth: 2, pointRadius: single ? 5 : 3, kind: d.kind };
      if (d.kind === "threshold" || d.kind === "goal") {
        const color = d.kind === "goal" ? "#2ca02c" : "#d62728";
        return Object.assign(base, { borderColor: color, borderDash: [6, 4], pointRadius: 0, borderWidth: 1.5, fill: false,
                                     legendStyle: { color, dash: [6, 4] } });
      }
      if (d.kind === "fault") {
        return Object.assign(base, { showLine: false, pointStyle: "crossRot", pointRadius: 9, pointHoverRadius: 11,
                                     borderWidth: 3, borderColor: "#e6550d", backgroundColor: "#e6550d",
                                     pointBorderColor: "#e6550d", faults: d.faults, legendStyle: { color: "#e6550d", cross: true } });
      }
      if (d.kind === "old") {
        return Object.assign(base, { borderColor: "#9e9e9e", backgroundColor: "#9e9e9e",
                                     pointStyle: "rect", pointBackgroundColor: "#9e9e9e",
                                     legendStyle: { color: "#9e9e9e", shape: "rect", lined: true } });
      }
      const { machine: name } = split(d);
      const machine = name != null ? Math.max(0, machines.indexOf(name)) : 0;
      const at = d.label.lastIndexOf(" @ ");
      const series = d.kind === "band-low" || d.kind === "band-high" ? "median" + d.label.slice(at)
        : d.kind === "guarded" && d.label.startsWith("median") ? "median" + d.label.slice(at) : split(d).series;
      if (!colors.has(series)) colors.set(series, palette[colors.size % palette.length]);
      const c = colors.get(series);
      if (d.kind === "band-low" || d.kind === "band-high") {
        // The p10-p90 band in the colour of the median that follows: the upper edge filled to the lower.
        return Object.assign(base, { borderColor: c + "66", borderWidth: 1, pointRadius: 0, backgroundColor: c + "33",
                                     fill: d.kind === "band-high" ? "-1" : false, legendStyle: { color: c, fill: true } });
      }
      if (bar) return Object.assign(base, { backgroundColor: c, borderColor: c, borderWidth: 1, minBarLength: 2,
                                            legendStyle: { color: c, fill: true, solid: true } });
      Object.assign(base, { borderDash: dashes[machine % dashes.length], pointStyle: shapes[machine % shapes.length] });
      const limits = d.kind === "guarded" && d.limitOf != null
        ? d.data.map((v) => (v != null && v > d.limitOf ? "#d62728" : c))
        : c;
      return Object.assign(base, { borderColor: c, backgroundColor: limits, pointBackgroundColor: limits, pointBorderColor: limits,
                                   legendStyle: { color: c, shape: "circle", lined: true } });
    });
    const banded = datasets.some((d) => d.kind === "band-high");
    const y = { type: spec.log ? "logarithmic" : "linear" };
    if (spec.log) Object.assign(y, decades(datasets), { afterBuildTicks: logTicks, ticks: { autoSkip: false, callback: fmtTick } });
    else if (!banded) y.beginAtZero = true;
    if (spec.yMin != null) y.min = spec.yMin;
    if (spec.yMax != null) y.max = spec.yMax;
    if (bar) Object.assign(y, { beginAtZero: true, max: 100 });
    const chart = new Chart(canvas, {
      type: bar ? "bar" : "line",
      data: { labels: spec.labels || model.labels, datasets },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        interaction: { mode: "nearest", intersect: false },
        scales: { y, x: { offset: true, ticks: { autoSkip: true, autoSkipPadding: 12, maxRotation: 45, minRotation: 0 } } },
        plugins: {
          title: { display: true, text: spec.title },
          legend: { display: false },
          tooltip: { callbacks: {
            label: (item) => {
              const d = item.dataset;
              if (d.kind === "fault") return "measurement fault: ratio " + d.faults[item.dataIndex].toFixed(3) + " < 1.0 (not a result)";
              return d.label + ": " + item.formattedValue;
            },
            afterLabel: (item) => {
              if (bar) return "";
              const p = model.points[item.dataIndex];
              return "commit " + p.commit + "\n" + p.date + "\nmachine " + p.machine + " (GPU " + p.gpu + (p.cpu ? ", " + p.cpu : "") +
                     (p.host ? ", host " + p.host : "") + ")\narch " + p.arch + ", NVRTC " + p.nvrtc;
            },
          } },
        },
      },
    });
    const entries = legend(chart, box);
    charts.push({ id: spec.id, chart, entries });
  }
  window.cubbyDashboard = {
    ready: true,
    expected: model.charts.filter((s) => s.datasets.length).map((s) => s.id),
    legendEntries: Object.fromEntries(charts.map((c) => [c.id, c.entries])),
    headline: { machines: model.headline.machines.map((m) => ({ label: m.label, rows: m.rows.length, current: m.current,
                                                                verdict: m.verdict.status, latest: m.index,
                                                                goals: Object.values(m.goals).map((g) => g.status) })),
                goals: model.headline.goals.length },
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
.chart { border: 1px solid #ddd; border-radius: 6px; padding: 6px; min-width: 0; }
.chart .plot { position: relative; height: 360px; }
.legend { display: flex; flex-wrap: wrap; justify-content: center; gap: 3px 14px; margin: 6px 4px 2px; font-size: 12px; color: #444; }
.legend span.item { display: inline-flex; align-items: center; gap: 5px; cursor: pointer; max-width: 100%; }
.legend .item.hidden { opacity: 0.35; text-decoration: line-through; }
.legend .swatch { flex: none; }
.legend.as-table { display: block; }
.legend table { border-collapse: collapse; margin: 0 auto; }
.legend tr.item { cursor: pointer; }
.legend th, .legend td { padding: 1px 6px; text-align: left; font-weight: normal; border-bottom: 1px solid #eee; }
.legend thead th { color: #666; white-space: nowrap; }
#verdicts { list-style: none; padding: 0; margin: 0.3em 0 1em; }
#verdicts li { padding: 4px 10px; margin: 3px 0; border-left: 5px solid #bbb; background: #f6f6f6; }
#verdicts li.verdict-fast { border-color: #1a7f37; background: #eef7f0; }
#verdicts li.verdict-slower { border-color: #b42318; background: #fdecea; }
td.goal .context { color: #555; font-size: 11px; white-space: normal; max-width: 26em; }
.empty { height: 80px; border: 1px dashed #bbb; border-radius: 6px; padding: 10px; color: #777; }
.problems { background: #fff4e5; border: 1px solid #f0b37e; padding: 0.5em 1em; border-radius: 6px; }
table.headline { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 13px; }
table.headline caption { text-align: left; color: #555; padding-bottom: 0.3em; max-width: 70em; }
table.headline th, table.headline td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
table.headline thead th { background: #f3f3f3; }
table.headline td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.headline th.machine { background: #f8f8ff; min-width: 11em; }
table.headline .run, table.headline .spread, table.headline .old { color: #777; font-weight: normal; font-size: 12px; }
table.headline tbody + tbody { border-top: 2px solid #999; }
td.goal { white-space: nowrap; vertical-align: top; }
.status-pass { color: #1a7f37; } td.status-pass { background: #e6f4ea; }
.status-fail { color: #b42318; } td.status-fail { background: #fdecea; }
.status-fault { color: #b54708; } td.status-fault { background: #fff1e0; }
.status-retired, .status-na, .status-none { color: #888; }
tr.tally td span { margin-right: 0.6em; font-weight: bold; }
</style></head>
<body>
<h1>cubby benchmarks</h1>
<p>${model.points.length} runs in the history${last ? `; latest: commit <code>${escapeHtml(last.commit)}</code> on ${escapeHtml(last.machine)}, ${escapeHtml(last.date)}` : ""}.
Red points lie above the regression threshold (${model.regressionFactor}x the machine's median warm disk hit) or a hit-path goal;
orange crosses on the 1.0 line are measurement faults (a hit + load "faster" than the load alone), not results.
Generated ${escapeHtml(model.generated)} by bench/dashboard/build.mjs.</p>
${notes}
<h2>Latest run per machine</h2>
${renderHeadline(model.headline)}
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
  const currentFile = arg("--current", null);
  const current = currentFile ? readHistory(path.resolve(currentFile)).records.at(-1) : null;
  const model = buildModel(records, { current: current ? machineName(current) : null });
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, renderPage(model, problems, chartJs.replace(/<\/script/gi, "<\\/script")));
  const drawn = model.charts.filter((c) => c.datasets.length).length;
  console.error(`[dashboard] wrote ${out}: ${records.length} runs, ${drawn} of ${model.charts.length} charts with data`);
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main();
}
