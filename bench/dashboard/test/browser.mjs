// Browser test of the dashboard: headless Chromium (Debian's `chromium`, driven by playwright-core)
// opens the generated page from file://, checks the headline (a row group per machine of the
// page's model with its rows, a goal row per goal with a pass/fail/fault/retired/n/a cell per
// machine), that every chart with data was drawn by Chart.js with its points and non-blank
// pixels, that no two x labels of a chart overlap, that the page made no network request and
// raised no error, and saves a screenshot of the whole page.
//
//   node test/browser.mjs PAGE.html [SCREENSHOT.png] [--expect ID,ID...]
//
// --expect: charts that must have data (e.g. hit-rate, recovery); a chart id ending in ":band"
// must also draw a p10-p90 band, one ending in ":fault" a measurement-fault marker.
//
// CUBBY_CHROMIUM overrides the browser (default /usr/bin/chromium). Exit status 0 when every
// check passed, 1 when one failed, 2 when the browser or the page cannot be opened.
import fs from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";

const args = process.argv.slice(2);
const expectAt = args.indexOf("--expect");
const expectIds = expectAt >= 0 ? (args.splice(expectAt, 2)[1] ?? "").split(",").filter(Boolean) : [];
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
      const kinds = chart ? chart.data.datasets.map((d) => d.kind) : [];
      result.charts[id] = {
        overlaps, shown, kinds, type: chart ? chart.config.type : "",
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
  }
  for (const want of expectIds) {
    const [id, feature] = want.split(":");
    const c = state.charts[id];
    check(Boolean(c && c.points > 0), `expected chart ${id} has data`);
    if (feature === "band") check(Boolean(c && c.kinds.includes("band-high")), `${id}: draws a p10-p90 band`);
    if (feature === "fault") check(Boolean(c && c.kinds.includes("fault")), `${id}: marks a measurement fault`);
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
