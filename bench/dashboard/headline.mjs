// The dashboard's headline: the latest run of every machine (cold, warm, speedups, the hit path
// over the bare load) and every goal of those runs with its status, as plain HTML tables.
//
// Goal statuses come from bench_report.py (pass, fail, n/a, fault). Two are decided here for
// records written before them: a value below the goal's `floor` is a "fault" (a measurement
// fault, never a pass), and the old goal on BM_WarmHitLoaded / BM_ModuleLoadBaseline (two
// separately measured families) is "retired" (no goal any more), or "fault" below 1.0.
//
// Above the tables, one verdict line per machine (verdict.mjs): its latest run against the
// previous runs of the same machine, and whether it ran under load. A goal that failed (or is a
// fault) shows this run's spread, the goal's values in the machine's previous runs with their
// noise band, and the run's load.
import { escapeHtml, fmtAgainst, fmtRatio, fmtTime } from "./format.mjs";
import { goalContext, machineVerdict, metricLine } from "./verdict.mjs";

// The old goal, as old records name it.
const RETIRED_GOAL = /BM_WarmHitLoaded <= [\d.]+x BM_ModuleLoadBaseline/;
export const STATUSES = ["pass", "fail", "fault", "retired", "n/a"];

export function goalStatus(goal) {
  const value = typeof goal?.value === "number" ? goal.value : null;
  if (RETIRED_GOAL.test(goal?.goal ?? "")) return value != null && value < 1 ? "fault" : "retired";
  if (value != null && typeof goal.floor === "number" && value < goal.floor) return "fault";
  return STATUSES.includes(goal?.status) ? goal.status : "n/a";
}

// The hit path over the bare load of one workload: the interleaved median (BM_HitVsLoad) with its
// spread, else the old ratio of two separate families, marked; fault below 1.0 either way.
export function hitLoadRatio(w) {
  if (typeof w?.hit_load_ratio === "number") {
    const value = w.hit_load_ratio;
    return { value, p10: w.hit_load_ratio_p10 ?? null, p90: w.hit_load_ratio_p90 ?? null,
             method: "interleaved", fault: value < 1 };
  }
  if (typeof w?.ratio_vs_load_baseline === "number") {
    const value = w.ratio_vs_load_baseline;
    return { value, p10: null, p90: null, method: "separate", fault: value < 1 };
  }
  return null;
}

// The rows of one record: its workloads, then its whole suites.
function rowsOf(record) {
  const rows = Object.entries(record.workloads ?? {}).map(([name, w]) => ({
    name, cold: w.cold_ms != null ? w.cold_ms * 1000 : null, warm: w.warm_disk_us ?? null,
    speedup: w.speedup_disk ?? null, loaded: w.hit_load_us ?? w.warm_loaded_us ?? null, ratio: hitLoadRatio(w),
  }));
  for (const [name, s] of Object.entries(record.suite ?? {})) {
    rows.push({ name: `whole suite ${name}`, cold: s.cold_s != null ? s.cold_s * 1e6 : null,
                warm: s.warm_s != null ? s.warm_s * 1e6 : null, speedup: s.ratio ?? null, loaded: null, ratio: null });
  }
  return rows.filter((r) => [r.cold, r.warm, r.speedup, r.loaded].some((v) => typeof v === "number") || r.ratio);
}

// The records of every machine, oldest first (by date, then by their order in the history).
export function runsByMachine(records, labelOf) {
  const order = records.map((record, index) => ({ record, index }))
    .sort((a, b) => String(a.record.date ?? "").localeCompare(String(b.record.date ?? "")) || a.index - b.index);
  const runs = new Map();
  for (const run of order) {
    const label = labelOf(run.record);
    if (!runs.has(label)) runs.set(label, []);
    runs.get(label).push(run);
  }
  return runs;
}

// Plain data: the latest record of every machine (the `current` machine first, the one that just
// ran, then newest first) with its verdict, and the union of their goals, each with its status
// and, when it failed, its context.
export function buildHeadline(records, labelOf, current = null) {
  const machines = [...runsByMachine(records, labelOf)].map(([label, runs]) => {
    const { record, index } = runs.at(-1);
    const earlier = runs.slice(0, -1).map((run) => run.record);
    return {
      label, index, commit: String(record.commit ?? "?"), date: String(record.date ?? "?"),
      gpu: record.machine?.gpu_name || (record.machine?.gpu ? "GPU" : "no GPU"),
      cpuModel: record.machine?.cpu_model ?? "", rows: rowsOf(record),
      current: label === current,
      verdict: machineVerdict(runs.map((run) => run.record),
                              (record.goals ?? []).filter((g) => goalStatus(g) === "fail").map((g) => g.goal)),
      goals: Object.fromEntries((record.goals ?? []).map((g) => {
        const status = goalStatus(g);
        return [g.goal, {
          status, value: typeof g.value === "number" ? g.value : null, target: g.target ?? null,
          spread: Array.isArray(g.spread) && g.spread.every((v) => typeof v === "number") ? g.spread : null,
          context: status === "fail" || status === "fault" ? goalContext(g, record, earlier) : null }];
      })),
    };
  }).sort((a, b) => Number(b.current) - Number(a.current) || b.date.localeCompare(a.date));
  const goals = [];
  for (const m of machines) for (const goal of Object.keys(m.goals)) if (!goals.includes(goal)) goals.push(goal);
  return { machines, goals };
}

function ratioCell(ratio) {
  if (!ratio) return `<td class="num">–</td>`;
  const spread = ratio.p10 != null && ratio.p90 != null
    ? ` <span class="spread">(${ratio.p10.toFixed(2)}–${ratio.p90.toFixed(2)})</span>` : "";
  if (ratio.fault) {
    return `<td class="num status-fault" title="below 1.0: a hit cannot beat the load it contains">` +
           `fault: ${ratio.value.toFixed(2)}x</td>`;
  }
  const old = ratio.method === "separate"
    ? ` <span class="old" title="BM_WarmHitLoaded / BM_ModuleLoadBaseline, measured apart: no goal">(apart)</span>` : "";
  return `<td class="num">${fmtRatio(ratio.value)}${spread}${old}</td>`;
}

function goalCell(goal) {
  if (!goal) return `<td class="goal status-none">–</td>`;
  const spread = goal.spread
    ? ` <span class="spread" title="this run's p10–p90">(${goal.spread[0].toFixed(2)}–${goal.spread[1].toFixed(2)})</span>` : "";
  const value = goal.value != null ? ` ${fmtAgainst(goal.value, goal.target)}${spread}` : "";
  const context = goal.context
    ? `<div class="context" data-load="${goal.context.load.known ? (goal.context.load.underLoad ? "under" : "not under") : "unknown"}">` +
      `${escapeHtml(goal.context.text)}</div>` : "";
  return `<td class="goal status-${goal.status.replace("/", "")}" data-status="${goal.status}">` +
         `<b>${goal.status}</b>${value}${context}</td>`;
}

// One line per machine: the verdict on its latest run.
function renderVerdicts(machines) {
  const others = machines.some((m) => m.current) && machines.length > 1
    ? `<li class="others">Other machines (the history; never merged with this one):</li>\n` : "";
  return `<ul id="verdicts">\n` + machines.map((m, i) => (i === 1 ? others : "") +
    `<li class="verdict verdict-${m.verdict.status}" data-machine="${escapeHtml(m.label)}" data-verdict="${m.verdict.status}" ` +
    `data-current="${m.current ? "yes" : "no"}" ` +
    `title="${escapeHtml(m.verdict.metrics.map(metricLine).join("\n") || "no metric to compare")}">` +
    `<b>${escapeHtml(m.label)}</b>${m.current ? " (this machine, the run just made)" : ""} <span class="run">(${escapeHtml(m.commit.slice(0, 12))}, ${escapeHtml(m.date.slice(0, 10))})</span>: ` +
    `${escapeHtml(m.verdict.text)}</li>`).join("\n") + `\n</ul>`;
}

export function renderHeadline(headline) {
  if (!headline.machines.length) return `<p class="empty">No runs yet: run ci/bench.sh --record.</p>`;
  const runs = headline.machines.map((m) => {
    const rows = m.rows.length ? m.rows : [{ name: "(no results)", ratio: null }];
    return `<tbody data-machine="${escapeHtml(m.label)}">` + rows.map((row, i) => `<tr>` +
      (i === 0 ? `<th rowspan="${rows.length}" class="machine" scope="rowgroup">${escapeHtml(m.label)}` +
                 `<div class="run">${escapeHtml(m.commit.slice(0, 12))} · ${escapeHtml(m.date.slice(0, 10))}` +
                 `${m.cpuModel ? ` · ${escapeHtml(m.cpuModel)}` : ""}</div></th>` : "") +
      `<td>${escapeHtml(row.name)}</td><td class="num">${fmtTime(row.cold)}</td><td class="num">${fmtTime(row.warm)}</td>` +
      `<td class="num">${fmtRatio(row.speedup)}</td><td class="num">${fmtTime(row.loaded)}</td>${ratioCell(row.ratio)}</tr>`,
    ).join("") + `</tbody>`;
  }).join("\n");
  const head = headline.machines.map((m) => `<th scope="col">${escapeHtml(m.label)}</th>`).join("");
  const goals = headline.goals.map((goal) => `<tr data-goal="${escapeHtml(goal)}"><th scope="row">${escapeHtml(goal)}</th>` +
    headline.machines.map((m) => goalCell(m.goals[goal])).join("") + `</tr>`).join("\n");
  const counts = headline.machines.map((m) => {
    const tally = STATUSES.map((s) => [s, Object.values(m.goals).filter((g) => g.status === s).length]).filter(([, n]) => n);
    return `<td>${tally.map(([s, n]) => `<span class="status-${s.replace("/", "")}">${n} ${s}</span>`).join(" ")}</td>`;
  }).join("");
  return `${renderVerdicts(headline.machines)}
<table id="headline" class="headline">
<caption>Latest run per machine: cold compile, warm disk hit, speedup, hit + module load and its ratio over the bare load
(interleaved median with p10–p90; "apart": two separately measured families, no goal)</caption>
<thead><tr><th scope="col">machine</th><th scope="col">workload</th><th scope="col">cold</th><th scope="col">warm (disk hit)</th>
<th scope="col">speedup</th><th scope="col">hit + load</th><th scope="col">hit + load / bare load</th></tr></thead>
${runs}
</table>
<table id="goals" class="headline">
<caption>Goals of each machine's latest run (pass, fail, fault: a measurement below its floor, not a result;
retired: no goal any more; n/a: not measured there). A fail or fault shows this run's spread, the goal's values in the
previous runs of that machine (is it beyond their noise band?) and the run's load</caption>
<thead><tr><th scope="col">goal</th>${head}</tr></thead>
<tbody>
${goals}
<tr class="tally"><th scope="row">total</th>${counts}</tr>
</tbody>
</table>`;
}
