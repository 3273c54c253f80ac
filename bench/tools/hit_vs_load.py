"""The hit path against the bare module load, measured interleaved: cubby_bench's
BM_HitVsLoad/<workload> (issue 15, part 1). Used by bench_report.py; standard library only.

One benchmark run alternates many pairs of (hit + cuModuleLoadData + resolve) and (bare load +
resolve of a fresh copy of the same CUBINs), so both halves of every pair see the same machine
state. Its counters: ratio (median of the per-pair ratios hit_load / load), ratio_p10, ratio_p90,
ratio_min, ratio_max, hit_load_us, load_us, hit_us (medians) and pairs. Run with
--benchmark_repetitions, the repetitions are combined here: the median of their `ratio`, the
lowest p10 and min, the highest p90 and max, the median of the times, the sum of the pairs.

Record keys (results.json, workloads[NAME]):
  hit_load_ratio, hit_load_ratio_p10, hit_load_ratio_p90, hit_load_ratio_min, hit_load_ratio_max,
  hit_load_us, bare_load_us, hit_only_us, hit_load_pairs, hit_load_repetitions

A hit contains the load it is compared with, so a median ratio below 1.0 is a measurement fault
(the two halves did not measure the same thing): its goal's status is "fault", never "pass".
The ratio of two separately measured families (BM_WarmHitLoaded / BM_ModuleLoadBaseline, the
record's ratio_vs_load_baseline) is still read for old records but is no goal any more.
"""
from __future__ import annotations

import math
import statistics

FAMILY = "BM_HitVsLoad"
# Goals: workload -> the highest median ratio that passes (GPU only: n/a without GPU results).
GOALS = {"mdspan50": 1.08, "mdspan-suite": 1.08, "tiny": 1.20}
# Below this the median ratio is a measurement fault: a hit + load cannot beat the load alone.
FAULT_BELOW = 1.0
# How repetitions combine: counter -> (record key, combine).
COMBINE = {
    "ratio": ("hit_load_ratio", statistics.median),
    "ratio_p10": ("hit_load_ratio_p10", min),
    "ratio_p90": ("hit_load_ratio_p90", max),
    "ratio_min": ("hit_load_ratio_min", min),
    "ratio_max": ("hit_load_ratio_max", max),
    "hit_load_us": ("hit_load_us", statistics.median),
    "load_us": ("bare_load_us", statistics.median),
    "hit_us": ("hit_only_us", statistics.median),
    "pairs": ("hit_load_pairs", sum),
}


def _finite(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def collect(bench: dict, pending: dict, workload: str) -> bool:
    """Keeps one BM_HitVsLoad/<workload> run (one repetition) in `pending` ({workload: [runs]});
    False when it has no usable `ratio` counter."""
    if _finite(bench.get("ratio")) is None or not workload:
        return False
    pending.setdefault(workload, []).append({c: _finite(bench.get(c)) for c in COMBINE})
    return True


def finish(pending: dict, record: dict) -> None:
    """Combines the repetitions of each workload into record["workloads"][workload]."""
    for workload, runs in pending.items():
        entry = record["workloads"].setdefault(workload, {})
        for counter, (key, combine) in COMBINE.items():
            values = [run[counter] for run in runs if run[counter] is not None]
            if values:
                entry[key] = combine(values)
        entry["hit_load_repetitions"] = len(runs)


def is_fault(ratio: float | None) -> bool:
    return ratio is not None and ratio < FAULT_BELOW


def goals(workloads: dict) -> list[dict]:
    """One goal per workload of GOALS: pass, fail, fault (median ratio < 1.0) or n/a; each with
    its spread (p10, p90) and the floor under which a value is a fault."""
    result = []
    for name, target in GOALS.items():
        w = workloads.get(name, {})
        value = w.get("hit_load_ratio")
        if value is None:
            status = "n/a"
        elif is_fault(value):
            status = "fault"
        else:
            status = "pass" if value <= target else "fail"
        result.append({"goal": f"{name} hit + load <= {target:.2f}x bare load ({FAMILY}, interleaved median; GPU)",
                       "value": value, "target": target, "status": status, "floor": FAULT_BELOW,
                       "spread": [w.get("hit_load_ratio_p10"), w.get("hit_load_ratio_p90")]})
    return result


def _fmt_us(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:.3g} ms" if value >= 1000 else f"{value:.3g} us"


def table_lines(workloads: dict) -> list[str]:
    """The report's section for the family (empty when no workload has it)."""
    lines = []
    for name, w in workloads.items():
        ratio = w.get("hit_load_ratio")
        if ratio is None:
            continue
        p10, p90 = w.get("hit_load_ratio_p10"), w.get("hit_load_ratio_p90")
        spread = f" (p10 {p10:.3f}, p90 {p90:.3f})" if p10 is not None and p90 is not None else ""
        fault = "  MEASUREMENT FAULT: below 1.0, not a result" if is_fault(ratio) else ""
        lines.append(f"  {name}: {ratio:.3f}x{spread}; hit + load {_fmt_us(w.get('hit_load_us'))}, bare load "
                     f"{_fmt_us(w.get('bare_load_us'))}, hit alone {_fmt_us(w.get('hit_only_us'))}; "
                     f"{w.get('hit_load_pairs', 0):.0f} pairs, {w.get('hit_load_repetitions', 1)} repetition(s){fault}")
    if lines:
        lines.insert(0, f"hit + load / bare load ({FAMILY}: interleaved pairs, median and p10-p90 of the pairs)")
    return lines
