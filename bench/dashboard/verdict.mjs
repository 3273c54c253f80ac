// The dashboard's verdict: is a machine's latest run still fast, or slower than its own recent
// past by more than the noise of that past? And, for a goal that failed, was it noise, a
// regression, or a busy machine?
//
// Headline metrics (all lower-is-better): per workload the cold compile, the warm disk hit, the
// hit + module load (BM_HitVsLoad's interleaved median) and its ratio over the bare load (ratios
// below 1.0 are measurement faults and never compared); per whole suite its 1st (cold) and 2nd
// (warm) run.
//
// Noise band of one metric: its values in the previous PREVIOUS_RUNS runs of the same machine that
// measured it (at least MIN_PREVIOUS of them, else no band): median m and median absolute
// deviation MAD; sigma = max(1.4826 x MAD, MIN_SIGMA x m) (1.4826 x MAD estimates the standard
// deviation and ignores one wild run; the floor, 2% of m, keeps a few runs that happened to agree
// closely from calling every 3% a regression); band = m +- BAND_SIGMAS x sigma (at least +-6%).
// The latest value above the band is "slower by X%" (X = value / m - 1), below it "faster".
//
// Under load: the load averages bench_report.py recorded (1 minute, at the start and the end of
// the run); a run is under load when the larger one reaches half the CPUs on top of the
// benchmark's own thread (load >= CPUs / 2 + 1). Records without them: "load unknown".
import { fmtPercent, fmtRatio, fmtTime, fmtValue } from "./format.mjs";

export const PREVIOUS_RUNS = 5;
export const MIN_PREVIOUS = 3;
export const BAND_SIGMAS = 3;
export const MIN_SIGMA = 0.02;
const MAD_TO_SIGMA = 1.4826;

const isNumber = (v) => typeof v === "number" && Number.isFinite(v);
const scaled = (v, factor) => (isNumber(v) ? v * factor : null);

const WORKLOAD_METRICS = [
  ["cold compile", (w) => scaled(w.cold_ms, 1e3), "time"],
  ["warm disk hit", (w) => w.warm_disk_us, "time"],
  ["hit + load", (w) => w.hit_load_us, "time"],
  ["hit + load / bare load", (w) => (w.hit_load_ratio >= 1 ? w.hit_load_ratio : null), "ratio"],
];
const SUITE_METRICS = [
  ["1st run (cold)", (s) => scaled(s.cold_s, 1e6), "time"],
  ["2nd run (warm)", (s) => scaled(s.warm_s, 1e6), "time"],
];

// {name: {value, unit}} of one record's headline metrics that it measured.
export function headlineMetrics(record) {
  const metrics = {};
  const add = (name, value, unit) => { if (isNumber(value) && value > 0) metrics[name] = { value, unit }; };
  for (const [workload, w] of Object.entries(record?.workloads ?? {})) {
    for (const [metric, pick, unit] of WORKLOAD_METRICS) add(`${workload} ${metric}`, pick(w ?? {}), unit);
  }
  for (const [suite, s] of Object.entries(record?.suite ?? {})) {
    for (const [metric, pick, unit] of SUITE_METRICS) add(`whole suite ${suite} ${metric}`, pick(s ?? {}), unit);
  }
  return metrics;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// The noise band of `values` (the previous runs' values of one metric; not empty).
export function noiseBand(values) {
  const m = median(values);
  const mad = median(values.map((v) => Math.abs(v - m)));
  const sigma = Math.max(MAD_TO_SIGMA * mad, MIN_SIGMA * Math.abs(m));
  return { n: values.length, median: m, sigma, low: m - BAND_SIGMAS * sigma, high: m + BAND_SIGMAS * sigma,
           min: Math.min(...values), max: Math.max(...values) };
}

// `value` against the band of `previous`: "slower", "faster" or "within" (lowerIsBetter says
// which way is slower); null with fewer than MIN_PREVIOUS previous values.
export function compare(value, previous, lowerIsBetter = true) {
  if (previous.length < MIN_PREVIOUS) return null;
  const band = noiseBand(previous);
  const change = value / band.median - 1;
  const above = value > band.high;
  const below = value < band.low;
  const status = !above && !below ? "within" : above === lowerIsBetter ? "slower" : "faster";
  return { band, change, status };
}

const formatter = (unit) => (unit === "time" ? fmtTime : unit === "ratio" ? fmtRatio : fmtValue);

// One compared metric as text: "tiny warm disk hit 41.1 µs vs 21 µs, the median of the previous
// 5 (band 19.1 µs to 22.9 µs): slower".
export function metricLine(m) {
  const fmt = formatter(m.unit);
  return `${m.name} ${fmt(m.value)} vs ${fmt(m.band.median)}, the median of the previous ${m.band.n} ` +
         `(band ${fmt(m.band.low)} to ${fmt(m.band.high)}): ${m.status}`;
}

// The verdict on the last of `runs` (the records of one machine, oldest first) against the ones
// before it. status: "slower" (a metric beyond its band, the slower side), "fast" (every compared
// metric within its band or faster, and no goal of `failedGoals`, the latest run's failed goals),
// "goals-fail" (within the bands, but goals fail), "baseline" (the machine's first run: recorded
// for the next ones), "none" (earlier runs, but too few that measured the same). text: the line
// the page shows.
export function machineVerdict(runs, failedGoals = []) {
  const latest = runs.at(-1);
  const earlier = runs.slice(0, -1).map(headlineMetrics);
  const metrics = [];
  for (const [name, { value, unit }] of Object.entries(headlineMetrics(latest))) {
    const previous = earlier.map((m) => m[name]?.value).filter(isNumber).slice(-PREVIOUS_RUNS);
    const result = compare(value, previous);
    if (result) metrics.push({ name, value, unit, ...result });
  }
  const slower = metrics.filter((m) => m.status === "slower").sort((a, b) => b.change - a.change);
  const faster = metrics.filter((m) => m.status === "faster").sort((a, b) => a.change - b.change);
  const previousRuns = metrics.length ? Math.max(...metrics.map((m) => m.band.n)) : Math.min(earlier.length, PREVIOUS_RUNS);
  const status = slower.length ? "slower" : metrics.length ? (failedGoals.length ? "goals-fail" : "fast")
    : earlier.length ? "none" : "baseline";
  const failing = failedGoals.length
    ? `${failedGoals.length} goal${failedGoals.length === 1 ? "" : "s"} fail${failedGoals.length === 1 ? "s" : ""}: ${failedGoals.join("; ")}`
    : "";
  const load = loadOf(latest);
  const head = `latest run vs the previous ${previousRuns} on this machine: `;
  let text;
  if (status === "baseline") {
    text = "first run: baseline recorded" + (failing ? `; ${failing}` : "");
  } else if (status === "none") {
    text = `${head}no verdict: fewer than ${MIN_PREVIOUS} of them measured what this run measured` + (failing ? `; ${failing}` : "");
  } else if (status === "goals-fail") {
    text = `${head}within the noise band of the previous runs, but ${failing}`;
  } else if (status === "slower") {
    const worst = slower[0];
    text = `${head}slower by ${Math.round(worst.change * 100)}% (beyond its noise band): ` +
           metricLine(worst).replace(/: slower$/, "") +
           (slower.length > 1 ? `; also beyond: ${slower.slice(1).map((m) => `${m.name} ${fmtPercent(m.change)}`).join(", ")}` : "");
  } else {
    const within = metrics.length - faster.length;
    text = `${head}still fast (${within} metric${within === 1 ? "" : "s"} within ${within === 1 ? "its" : "their"} noise band` +
           (faster.length ? `; faster beyond it: ${faster.map((m) => `${m.name} ${fmtPercent(m.change)}`).join(", ")}` : "") + ")";
  }
  return { status, previousRuns, change: slower[0]?.change ?? null, metrics, slower, faster, load,
           text: `${text}; ${load.text}` };
}

// The run's load: {known, start, end (1-minute averages or null), cpus, underLoad, text}.
export function loadOf(record) {
  const one = (avg) => (Array.isArray(avg) && isNumber(avg[0]) ? avg[0] : null);
  const start = one(record?.load?.start);
  const end = one(record?.load?.end);
  const cpus = Number(record?.machine?.cpus) > 0 ? Number(record.machine.cpus) : null;
  if (start == null && end == null) return { known: false, start, end, cpus, underLoad: null, text: "load unknown" };
  const peak = Math.max(...[start, end].filter((v) => v != null));
  const underLoad = cpus == null ? null : peak >= cpus / 2 + 1;
  const parts = [start != null ? `${start.toFixed(2)} at the start` : null, end != null ? `${end.toFixed(2)} at the end` : null];
  const text = `load ${parts.filter(Boolean).join(", ")}` +
               (cpus == null ? " (CPUs unknown)" : ` on ${cpus} CPU${cpus === 1 ? "" : "s"}: ${underLoad ? "under load" : "not under load"}`);
  return { known: true, start, end, cpus, underLoad, text };
}

// A goal of the latest run in its context: this run's own spread (p10-p90, where the goal has
// one; the goal's cell shows it), the same goal's values in the previous runs of the machine with their band and whether
// this value lies beyond it, and the run's load. `earlier`: the machine's records before this one.
export function goalContext(goal, record, earlier) {
  const own = Array.isArray(goal?.spread) && goal.spread.length === 2 && goal.spread.every(isNumber) ? goal.spread : null;
  const previous = earlier.map((r) => (r.goals ?? []).find((g) => g.goal === goal?.goal)?.value)
    .filter(isNumber).slice(-PREVIOUS_RUNS);
  const lowerIsBetter = !/>=|≥/.test(String(goal?.goal ?? ""));
  const value = isNumber(goal?.value) ? goal.value : null;
  const result = value != null ? compare(value, previous, lowerIsBetter) : null;
  const parts = [];
  if (result) {
    const b = result.band;
    parts.push(`previous ${b.n} here: ${fmtValue(b.min)}–${fmtValue(b.max)} (median ${fmtValue(b.median)}): ` +
               (result.status === "within" ? "within its noise band"
                 : `${result.status === "slower" ? "worse" : "better"} beyond its noise band (${fmtPercent(result.change)})`));
  } else if (previous.length) {
    parts.push(`previous ${previous.length} here: ${fmtValue(Math.min(...previous))}–${fmtValue(Math.max(...previous))} ` +
               `(too few for a noise band)`);
  } else {
    parts.push("no earlier run here");
  }
  const load = loadOf(record);
  parts.push(load.text);
  return { own, previous: result ? { ...result.band, status: result.status, change: result.change } : null, load,
           text: parts.join(" · ") };
}
