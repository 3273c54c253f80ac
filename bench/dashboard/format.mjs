// How the dashboard writes numbers and text into HTML: times with their unit, ratios, plain values.

export function fmtTime(us) {
  if (typeof us !== "number" || !Number.isFinite(us)) return "–";
  const abs = Math.abs(us);
  const [scale, unit] = abs >= 1e6 ? [1e6, "s"] : abs >= 1e3 ? [1e3, "ms"] : abs >= 1 ? [1, "µs"] : [1e-3, "ns"];
  return `${Number((us / scale).toPrecision(3))} ${unit}`;
}

export function fmtRatio(x) {
  if (typeof x !== "number" || !Number.isFinite(x)) return "–";
  return x >= 100 ? `${Math.round(x).toLocaleString("en-US")}x` : `${x.toFixed(2)}x`;
}

export function fmtValue(x) {
  if (typeof x !== "number" || !Number.isFinite(x)) return "–";
  if (Math.abs(x) >= 100) return Math.round(x).toLocaleString("en-US");
  return Number(x.toPrecision(3)).toString();
}

// A value judged against `target` (a goal's threshold), with the decimals the comparison needs:
// at least the target's, more until the value no longer rounds to the target (1.083 against 1.08
// shows "1.083", never "1.08"); plain fmtValue without a target.
export function fmtAgainst(x, target) {
  if (typeof x !== "number" || !Number.isFinite(x)) return "–";
  if (typeof target !== "number" || !Number.isFinite(target)) return fmtValue(x);
  const places = (String(target).split(".")[1] ?? "").length;
  for (let digits = places; digits <= 6; digits += 1) {
    const text = x.toFixed(digits);
    if (x === target || Number(text) !== target) return Math.abs(x) >= 1000 && digits === 0 ? Math.round(x).toLocaleString("en-US") : text;
  }
  return String(x);
}

// A signed percentage: "+96%", "-12%", "+4.2%" (one decimal below 10%).
export function fmtPercent(fraction) {
  const pct = fraction * 100;
  const digits = Math.abs(pct) < 10 ? 1 : 0;
  return `${pct >= 0 ? "+" : "−"}${Math.abs(pct).toFixed(digits)}%`;
}

export function escapeHtml(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}
