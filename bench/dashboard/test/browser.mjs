// Browser test of the dashboard: headless Chromium (Debian's `chromium`, driven by playwright-core)
// opens the generated page from file://, checks the headline (a verdict line per machine, "still
// fast" / "slower by X% (beyond its noise band)" / "within the noise band ..., but N goals fail" /
// "first run: baseline recorded" / "no verdict", with the run's load; the machine that just ran
// first, when the page has one; a row group
// per machine of the page's model with its rows; a goal row per goal with a pass/fail/fault/
// retired/n/a cell per machine, every fail or fault with its spread over the previous runs and
// its load), one identity per machine (every run of one GPU model, CPU count and machine id under
// one name), and per chart, measured in the page: drawn by Chart.js with its points and non-blank
// pixels, every point inside the plot area and clear of its edges (one run too); dashed lines only
// for goals and thresholds;
// every trend line one span that reaches its machine's latest run; a legend below the canvas,
// inside its box, with an entry per series and per machine, none clipped or overlapping; no two
// x labels and no two y labels overlapping; log axes over whole decades, linear axes from zero
// unless the chart draws its noise band. Then no network request, no error, and a screenshot.
//
//   node test/browser.mjs PAGE.html [SCREENSHOT.png] [--expect ID,ID...]
//        [--expect-verdict 'MACHINE=STATUS;...'] [--expect-load unknown,under,not-under]
//
// --expect: charts that must have data (e.g. hit-rate, recovery); a chart id ending in ":band"
// must also draw a p10-p90 band, one ending in ":fault" a measurement-fault marker, ":table" a
// legend table, ":bar" one bar chart of two series.
// --expect-verdict: the verdict (slower, fast, goals-fail, baseline, none) each named machine must get.
// --expect-current: the machine that just ran, which must come first, marked.
// --expect-load: load states that the goal failures must show between them.
//
// CUBBY_CHROMIUM overrides the browser (default /usr/bin/chromium). Exit status 0 when every
// check passed, 1 when one failed, 2 when the browser or the page cannot be opened.
import fs from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";

const args = process.argv.slice(2);
const option = (name) => {
  const at = args.indexOf(name);
  return at >= 0 ? (args.splice(at, 2)[1] ?? "") : "";
};
const expectIds = option("--expect").split(",").filter(Boolean);
const expectVerdicts = option("--expect-verdict").split(";").filter(Boolean).map((pair) => pair.split("="));
const expectLoads = option("--expect-load").split(",").filter(Boolean);
const expectCurrent = option("--expect-current");
const page = path.resolve(args[0] ?? "");
const screenshot = path.resolve(args[1] ?? page.replace(/\.html$/, "") + ".png");
const executablePath = process.env.CUBBY_CHROMIUM || "/usr/bin/chromium";

if (!args[0] || !fs.existsSync(page)) {
  console.error(`[browser test] no page at '${args[0] ?? ""}': build it with node build.mjs first`);
  process.exit(2);
}
if (!fs.existsSync(executablePath)) {
  console.error(`[browser test] no Chromium at ${executablePath}: apt-get install chromium (or set CUBBY_CHROMIUM)`);
  process.exit(2);
}

let passed = 0;
let failed = 0;
function check(ok, what) {
  if (ok) passed += 1;
  else failed += 1;
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
}

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const tab = await context.newPage();
  const errors = [];
  const requests = [];
  tab.on("pageerror", (error) => errors.push(String(error)));
  tab.on("console", (message) => { if (message.type() === "error") errors.push(message.text()); });
  tab.on("request", (request) => { if (!request.url().startsWith("file:")) requests.push(request.url()); });
  await tab.goto("file://" + page, { waitUntil: "load" });
  await tab.waitForFunction(() => window.cubbyDashboard && window.cubbyDashboard.ready, null, { timeout: 20000 });

  const state = await tab.evaluate(() => {
    const result = { expected: window.cubbyDashboard.expected, charts: {}, model: window.cubbyDashboard.headline };
    // The headline as drawn: per machine its row group; per goal row its cells' statuses.
    result.runs = [...document.querySelectorAll("#headline tbody[data-machine]")].map((body) => ({
      machine: body.dataset.machine, rows: body.querySelectorAll("tr").length,
      label: body.querySelector("th.machine")?.textContent ?? "" }));
    result.goalRows = [...document.querySelectorAll("#goals tr[data-goal]")].map((row) =>
      [...row.querySelectorAll("td")].map((cell) => cell.dataset.status ?? "none"));
    result.goalHeads = [...document.querySelectorAll("#goals thead th")].slice(1).map((th) => th.textContent);
    result.verdicts = [...document.querySelectorAll("#verdicts li[data-machine]")].map((li) => ({
      machine: li.dataset.machine, status: li.dataset.verdict, current: li.dataset.current, text: li.textContent }));
    result.failures = [...document.querySelectorAll("#goals td[data-status=fail], #goals td[data-status=fault]")].map((td) => ({
      text: td.querySelector(".context")?.textContent ?? "", load: td.querySelector(".context")?.dataset.load ?? "" }));
    result.points = window.CUBBY_MODEL.points.map((p) => ({ machine: p.machine, gpu: p.gpu, cpus: p.cpus, id: p.id, named: p.named }));
    const inside = (r, outer) => r.left >= outer.left - 0.5 && r.right <= outer.right + 0.5 &&
                                 r.top >= outer.top - 0.5 && r.bottom <= outer.bottom + 0.5;
    const meets = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
    for (const id of result.expected) {
      const canvas = document.getElementById(id);
      const chart = canvas && window.Chart.getChart(canvas);
      let painted = 0;
      if (canvas && canvas.width > 0 && canvas.height > 0) {
        const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
        for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) painted += 1;
      }
      // X labels overlap when neither their spacing across (rotated) nor along their direction
      // clears the label: spacing * sin(rotation) >= font size, or spacing * cos(rotation) >= width.
      let overlaps = 0;
      let shown = 0;
      const x = chart && chart.scales.x;
      if (x) {
        const ctx = canvas.getContext("2d");
        const font = window.Chart.helpers.toFont(x.options.ticks.font);
        ctx.font = font.string;
        const angle = (x.labelRotation * Math.PI) / 180;
        const ticks = x.ticks.map((tick, i) => ({ at: x.getPixelForTick(i), text: String(x.getLabelForValue(tick.value)) }));
        shown = ticks.length;
        for (let i = 1; i < ticks.length; i += 1) {
          const gap = Math.abs(ticks[i].at - ticks[i - 1].at);
          const width = Math.max(ctx.measureText(ticks[i].text).width, ctx.measureText(ticks[i - 1].text).width);
          if (gap * Math.sin(angle) < font.size && gap * Math.cos(angle) < width) overlaps += 1;
        }
      }
      // Y labels overlap when two shown labels are closer than the font's height, or one leaves the canvas.
      let yOverlaps = 0;
      let yShown = 0;
      const y = chart && chart.scales.y;
      if (y) {
        const size = window.Chart.helpers.toFont(y.options.ticks.font).size;
        const at = y.ticks.map((tick, i) => ({ at: y.getPixelForTick(i), label: tick.label }))
          .filter((t) => t.label != null && String(t.label) !== "").map((t) => t.at).sort((a, b) => a - b);
        yShown = at.length;
        for (let i = 1; i < at.length; i += 1) if (at[i] - at[i - 1] < size) yOverlaps += 1;
        if (at.length && (at[0] < size / 2 - 1 || at.at(-1) > canvas.clientHeight - size / 2 + 1)) yOverlaps += 1;
      }
      const axis = y ? { type: y.type, min: y.min, max: y.max } : null;
      // Trend lines: every machine's line (spanning the runs that did not measure it) is one segment
      // from its first point to its last, and reaches the machine's latest run when that run measured
      // it; one series of one machine (GPU model and CPU count of its points) is one line, not two.
      const latest = Object.fromEntries(window.cubbyDashboard.headline.machines.map((m) => [m.label, m.latest]));
      const trends = { checked: 0, broken: [] };
      const lines = new Map();
      if (chart && chart.config.type === "line") {
        chart.data.datasets.forEach((d, i) => {
          const at = d.label.lastIndexOf(" @ ");
          if (at < 0 || !["guarded", "old", undefined].includes(d.kind)) return;
          const machine = d.label.slice(at + 3);
          const has = d.data.map((v, j) => (typeof v === "number" ? j : -1)).filter((j) => j >= 0);
          for (const j of has) {
            const p = window.CUBBY_MODEL.points[j];
            const key = `${d.label.slice(0, at)} on ${p.named ? p.machine : `${p.gpu}|${p.cpus}|${p.id}`}`;
            if (lines.has(key) && lines.get(key) !== i) trends.broken.push(`${key}: split into two lines`);
            lines.set(key, i);
          }
          if (!has.length || typeof d.data[latest[machine]] !== "number") return;
          trends.checked += 1;
          const segments = chart.getDatasetMeta(i).dataset.segments;
          if (segments.length !== 1 || segments[0].start !== has[0] || segments[0].end !== has.at(-1) ||
              has.at(-1) < latest[machine]) {
            trends.broken.push(`${d.label} (${JSON.stringify(segments)}; points ${has.join(",")}; latest run ${latest[machine]})`);
          }
        });
      }
      // The legend: below the canvas and inside the chart's box, an entry per series and per machine
      // (series x machine table: a row per series, a column per machine), none clipped or overlapping.
      const box = canvas && canvas.closest(".chart");
      const legendElement = box && box.querySelector(".legend");
      const legend = { present: Boolean(legendElement), entries: 0, wanted: 0, problems: [],
                       table: Boolean(legendElement && legendElement.querySelector("table")) };
      if (chart && chart.legend && chart.options.plugins.legend.display !== false) {
        // A Chart.js legend inside the canvas: every entry's box within the legend's and the canvas's.
        const l = chart.legend;
        const area = { left: l.left, right: l.right, top: l.top, bottom: l.bottom };
        const whole = { left: 0, right: canvas.clientWidth, top: 0, bottom: canvas.clientHeight };
        const hit = (l.legendHitBoxes ?? []).map((b) => ({ left: b.left, right: b.left + b.width, top: b.top, bottom: b.top + b.height }));
        hit.forEach((b, i) => { if (!inside(b, area) || !inside(b, whole)) legend.problems.push(`Chart.js legend entry ${i} clipped`); });
        if (hit.length < (l.legendItems ?? []).length) legend.problems.push("Chart.js legend entries dropped");
      }
      if (legendElement) {
        const boxRect = box.getBoundingClientRect();
        const legendRect = legendElement.getBoundingClientRect();
        const canvasRect = canvas.getBoundingClientRect();
        const items = [...legendElement.querySelectorAll(".item")];
        legend.entries = items.length + Math.max(0, legendElement.querySelectorAll("thead th").length - 1);
        const series = new Set(chart.data.datasets.filter((d) => d.kind !== "band-low").map((d) =>
          (d.label.lastIndexOf(" @ ") >= 0 ? d.label.slice(0, d.label.lastIndexOf(" @ ")) : d.label)));
        const lined = new Set(chart.data.datasets.filter((d) => ["guarded", "old", undefined].includes(d.kind) &&
          d.label.includes(" @ ")).map((d) => d.label.slice(d.label.lastIndexOf(" @ ") + 3)));
        legend.wanted = series.size + (chart.config.type === "bar" ? 0 : lined.size);
        if (legendRect.top < canvasRect.bottom - 0.5) legend.problems.push("legend overlaps the canvas");
        if (!inside(legendRect, boxRect)) legend.problems.push("legend outside its box");
        if (box.scrollWidth > box.clientWidth + 1 || box.scrollHeight > box.clientHeight + 1) legend.problems.push("box overflows");
        const rects = items.map((item) => item.getBoundingClientRect());
        items.forEach((item, i) => {
          if (!inside(rects[i], boxRect)) legend.problems.push(`entry ${i} outside the box`);
          if (item.scrollWidth > item.clientWidth + 1) legend.problems.push(`entry ${i} clipped`);
          for (let j = 0; j < i; j += 1) if (meets(rects[i], rects[j])) legend.problems.push(`entries ${j} and ${i} overlap`);
        });
      }
      // Points: inside the plot area, and (a line chart's) clear of its left and right edges by
      // more than their radius, so that one run is a whole point mid-chart, not a dot clipped at
      // an edge. Dashes: only goals and thresholds (a machine is told by its point shape).
      const clipped = [];
      const dashed = [];
      if (chart && chart.config.type === "line") {
        const a = chart.chartArea;
        chart.data.datasets.forEach((d, i) => {
          if (Array.isArray(d.borderDash) && d.borderDash.length && !["threshold", "goal"].includes(d.kind)) dashed.push(d.label);
          if (!chart.isDatasetVisible(i) || d.kind === "threshold" || d.kind === "goal") return;
          chart.getDatasetMeta(i).data.forEach((el, j) => {
            if (typeof d.data[j] !== "number" || el.skip) return;
            const r = el.options?.radius ?? 3;
            if (el.x - r <= a.left + 1 || el.x + r >= a.right - 1 || el.y < a.top - 0.5 || el.y > a.bottom + 0.5) {
              clipped.push(`${d.label} #${j} at (${Math.round(el.x)}, ${Math.round(el.y)})`);
            }
          });
        });
      }
      const kinds = chart ? chart.data.datasets.map((d) => d.kind) : [];
      result.charts[id] = {
        overlaps, shown, kinds, clipped, dashed, type: chart ? chart.config.type : "", yOverlaps, yShown, axis, trends, legend,
        banded: kinds.includes("band-high"),
        canvas: Boolean(canvas),
        chart: Boolean(chart),
        points: chart ? chart.data.datasets.reduce((n, d) => n + d.data.filter((v) => typeof v === "number").length, 0) : 0,
        painted,
        width: canvas ? canvas.width : 0,
      };
    }
    result.canvases = document.querySelectorAll("canvas").length;
    return result;
  });

  const model = state.model;
  check(model.machines.length > 0, `the headline has machines (${model.machines.map((m) => m.label).join("; ")})`);
  check(new Set(model.machines.map((m) => m.label)).size === model.machines.length, "machine names are distinct");
  check(state.runs.length === model.machines.length && state.runs.every((r, i) => r.machine === model.machines[i].label
        && r.rows === Math.max(1, model.machines[i].rows) && r.label.startsWith(r.machine)),
        `headline: one row group per machine with its rows (${state.runs.map((r) => `${r.machine}: ${r.rows}`).join(", ")})`);
  check(state.goalHeads.join("|") === model.machines.map((m) => m.label).join("|"), "goal table: a column per machine");
  // The verdict line of every machine, in the headline's order.
  const verdictText = /^(?:latest run vs the previous \d+ on this machine: )?(still fast|slower by \d+% \(beyond its noise band\)|within the noise band of the previous runs, but \d+ goals? fails?|no verdict|first run: baseline recorded)/;
  const loadText = /; load (unknown|[\d.]+ at the (start|end))/;
  check(state.verdicts.length === model.machines.length && state.verdicts.every((v, i) => v.machine === model.machines[i].label),
        `a verdict line per machine (${state.verdicts.map((v) => `${v.machine}: ${v.status}`).join(", ")})`);
  for (const v of state.verdicts) {
    const said = v.text.slice(v.text.indexOf("): ") + 3);
    const status = said.match(verdictText)?.[1] ?? null;
    const wanted = { fast: "still fast", none: "no verdict", baseline: "first run: baseline recorded",
                     "goals-fail": "within the noise band of the previous runs, but" }[v.status] ?? "slower by";
    check(status != null && loadText.test(said) && status.startsWith(wanted), `verdict of ${v.machine}: ${said}`);
  }
  const current = state.verdicts.filter((v) => v.current === "yes");
  check(current.length <= 1 && (!current.length || state.verdicts[0].current === "yes"),
        `the machine that just ran comes first (${current.map((v) => v.machine).join(", ") || "none on this page"})`);
  if (expectCurrent) {
    check(state.verdicts[0]?.machine === expectCurrent && state.verdicts[0]?.current === "yes",
          `expected ${expectCurrent} first, as the machine that just ran (got ${state.verdicts[0]?.machine ?? "none"})`);
  }
  for (const [machine, status] of expectVerdicts) {
    const v = state.verdicts.find((x) => x.machine === machine);
    check(v?.status === status, `expected verdict of ${machine}: ${status} (got ${v?.status ?? "no line"})`);
  }
  // One identity per machine: all runs of one GPU model and CPU count under one name, and back.
  const names = new Map();
  const groups = new Map();
  for (const p of state.points.filter((x) => !x.named)) {
    const key = `${p.gpu}|${p.cpus}|${p.id ?? ""}`;
    names.set(key, new Set([...(names.get(key) ?? []), p.machine]));
    groups.set(p.machine, new Set([...(groups.get(p.machine) ?? []), key]));
  }
  check([...names.values()].every((s) => s.size === 1) && [...groups.values()].every((s) => s.size === 1),
        `one identity per machine (${[...names].map(([key, s]) => `${key} -> ${[...s].join(" / ")}`).join("; ")})`);
  // Every failed goal with its spread over the previous runs and the run's load.
  check(state.failures.every((f) => /(previous \d+ here|no earlier run here)/.test(f.text) && /load (unknown|[\d.]+)/.test(f.text)),
        `every fail/fault shows its spread and load (${state.failures.length}: ${state.failures.map((f) => f.load).join(", ")})`);
  for (const load of expectLoads) {
    check(state.failures.some((f) => f.load === load.replace("-", " ")), `a goal failure shows load '${load}'`);
  }
  check(state.goalRows.length === model.goals && model.goals > 0, `goal table: a row per goal (${state.goalRows.length})`);
  const statuses = ["pass", "fail", "fault", "retired", "n/a", "none"];
  check(state.goalRows.every((cells) => cells.length === model.machines.length && cells.every((s) => statuses.includes(s))),
        "goal table: a status cell per machine in every row");
  const drawn = state.goalRows.flat();
  const wanted = model.machines.flatMap((m) => m.goals);
  for (const status of ["pass", "fail", "fault"]) {
    const n = wanted.filter((s) => s === status).length;
    check(drawn.filter((s) => s === status).length === n, `goal table: ${n} ${status} cell(s), as the model says`);
  }
  check(state.expected.length > 0, `the page has charts with data (${state.expected.length})`);
  check(state.canvases === state.expected.length, `one canvas per chart with data (${state.canvases})`);
  for (const id of state.expected) {
    const c = state.charts[id];
    check(c.canvas && c.chart, `${id}: a Chart.js chart on its canvas`);
    check(c.points > 0, `${id}: has data points (${c.points})`);
    check(c.painted > 1000, `${id}: pixels drawn (${c.painted} non-transparent, width ${c.width})`);
    check(c.overlaps === 0, `${id}: x labels do not overlap (${c.shown} shown, ${c.overlaps} overlapping)`);
    check(c.yOverlaps === 0 && c.yShown >= 2, `${id}: y labels do not overlap (${c.yShown} shown, ${c.yOverlaps} overlapping)`);
    const decade = (v) => Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9;
    check(c.axis && (c.axis.type === "logarithmic" ? decade(c.axis.min) && decade(c.axis.max) : c.axis.min <= 0 || c.banded),
          `${id}: ${c.axis?.type} y axis ${c.axis?.min}..${c.axis?.max} ${c.axis?.type === "logarithmic" ? "over whole decades" : c.banded ? "with the noise band drawn" : "from zero"}`);
    check(c.clipped.length === 0, `${id}: every point inside the plot, clear of its edges` +
          (c.clipped.length ? `; not: ${c.clipped.slice(0, 4).join("; ")}` : ""));
    check(c.dashed.length === 0, `${id}: dashed lines are goals and thresholds only` +
          (c.dashed.length ? `; also dashed: ${c.dashed.slice(0, 4).join("; ")}` : ""));
    check(c.trends.broken.length === 0, `${id}: ${c.trends.checked} trend lines reach their machine's latest run` +
          (c.trends.broken.length ? `; broken: ${c.trends.broken.join("; ")}` : ""));
    check(c.legend.problems.length === 0 && (!c.legend.present || c.legend.entries === c.legend.wanted),
          `${id}: legend fits (${c.legend.entries} entries of ${c.legend.wanted}${c.legend.problems.length ? "; " + [...new Set(c.legend.problems)].join(", ") : ""})`);
  }
  for (const want of expectIds) {
    const [id, feature] = want.split(":");
    const c = state.charts[id];
    check(Boolean(c && c.points > 0), `expected chart ${id} has data`);
    if (feature === "band") check(Boolean(c && c.kinds.includes("band-high")), `${id}: draws a p10-p90 band`);
    if (feature === "fault") check(Boolean(c && c.kinds.includes("fault")), `${id}: marks a measurement fault`);
    if (feature === "table") check(Boolean(c && c.legend.table), `${id}: its legend is a table (series x machine)`);
    if (feature === "bar") check(Boolean(c && c.type === "bar" && c.kinds.length === 2), `${id}: one bar chart, two series`);
  }
  check(errors.length === 0, `no page errors${errors.length ? ": " + errors.join("; ") : ""}`);
  check(requests.length === 0, `no network requests (offline page)${requests.length ? ": " + requests.join(", ") : ""}`);
  // The whole page at once: a viewport as tall as the page (a full-page capture of a shorter one
  // makes Chart.js resize mid-capture), given a moment to redraw.
  const height = await tab.evaluate(() => document.documentElement.scrollHeight);
  await tab.setViewportSize({ width: 1400, height });
  await tab.waitForTimeout(300);
  await tab.screenshot({ path: screenshot });
  check(fs.statSync(screenshot).size > 10000, `screenshot saved to ${screenshot}`);
} catch (error) {
  console.error(`[browser test] could not run the page in ${executablePath}: ${error.message}`);
  failed += 1;
} finally {
  await browser.close();
}
console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
