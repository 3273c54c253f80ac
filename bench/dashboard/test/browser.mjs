// Browser test of the dashboard: headless Chromium (Debian's `chromium`, driven by playwright-core)
// opens the generated page from file://, checks that every chart with data was drawn by Chart.js
// with its points and non-blank pixels, that the page made no network request and raised no
// error, and saves a screenshot.
//
//   node test/browser.mjs PAGE.html [SCREENSHOT.png]
//
// CUBBY_CHROMIUM overrides the browser (default /usr/bin/chromium). Exit status 0 when every
// check passed, 1 when one failed, 2 when the browser or the page cannot be opened.
import fs from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";

const page = path.resolve(process.argv[2] ?? "");
const screenshot = path.resolve(process.argv[3] ?? page.replace(/\.html$/, "") + ".png");
const executablePath = process.env.CUBBY_CHROMIUM || "/usr/bin/chromium";

if (!process.argv[2] || !fs.existsSync(page)) {
  console.error(`[browser test] no page at '${process.argv[2] ?? ""}': build it with node build.mjs first`);
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
    const result = { expected: window.cubbyDashboard.expected, charts: {} };
    for (const id of result.expected) {
      const canvas = document.getElementById(id);
      const chart = canvas && window.Chart.getChart(canvas);
      let painted = 0;
      if (canvas && canvas.width > 0 && canvas.height > 0) {
        const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
        for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) painted += 1;
      }
      result.charts[id] = {
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

  check(state.expected.length > 0, `the page has charts with data (${state.expected.length})`);
  check(state.canvases === state.expected.length, `one canvas per chart with data (${state.canvases})`);
  for (const id of state.expected) {
    const c = state.charts[id];
    check(c.canvas && c.chart, `${id}: a Chart.js chart on its canvas`);
    check(c.points > 0, `${id}: has data points (${c.points})`);
    check(c.painted > 1000, `${id}: pixels drawn (${c.painted} non-transparent, width ${c.width})`);
  }
  check(errors.length === 0, `no page errors${errors.length ? ": " + errors.join("; ") : ""}`);
  check(requests.length === 0, `no network requests (offline page)${requests.length ? ": " + requests.join(", ") : ""}`);
  await tab.screenshot({ path: screenshot, fullPage: true });
  check(fs.statSync(screenshot).size > 10000, `screenshot saved to ${screenshot}`);
} catch (error) {
  console.error(`[browser test] could not run the page in ${executablePath}: ${error.message}`);
  failed += 1;
} finally {
  await browser.close();
}
console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
