#!/usr/bin/python3
"""Turns cubby's benchmark outputs into one results record, a readable table, a history line and
github-action-benchmark files. Standard library only (runs on Debian's /usr/bin/python3).

  bench_report.py --bench cubby_bench.json [--recovery recovery_bench.json] [--suite suite.json]
                  [--out bench/out] [--history bench/results/history.jsonl] [--commit SHA]

Inputs that are missing, corrupt or from another version are reported on stderr with what to do,
and the rest still runs. Writes OUT/results.json (format below), OUT/github-action-benchmark/
{smaller,bigger}.json (customSmallerIsBetter / customBiggerIsBetter), appends the record to the
history file (one JSON object a line). Exit status: 0, or 2 when no input could be used at all.

results.json ("schema": 1):
  commit, date, machine {host, cpus, cpu_model, gpu, gpu_name, arch, nvrtc, label, id},
    (label: CUBBY_BENCH_MACHINE or --machine-label, a name for the machine on the dashboard; absent
     when not given: the dashboard derives one from the GPU, the CPUs and id; id: a hash of
     /etc/machine-id, machine_id())
  workloads {NAME: {cold_ms, warm_memory_us, warm_disk_us, warm_remote_us, load_baseline_us,
                    warm_loaded_us, speedup_memory, speedup_disk, speedup_loaded,
                    ratio_vs_load_baseline (two separately measured families: read, no goal),
                    hit_load_ratio, hit_load_ratio_p10, hit_load_ratio_p90, hit_load_ratio_min,
                    hit_load_ratio_max, hit_load_us, bare_load_us, hit_only_us, hit_load_pairs,
                    hit_load_repetitions, (BM_HitVsLoad, interleaved: see hit_vs_load.py)
                    cubin_bytes, name_expressions, programs,
                    fleet_first_run_us, speedup_fleet_first_run, fleet_ratio_vs_local_warm,
                    fleet_served_ratio_vs_local_warm, (BM_FleetFirstRun: a fresh store served by Redis)
                    fleet_loaded_us, speedup_fleet_loaded, fleet_loaded_ratio_vs_local_warm,
                                                      (BM_FleetFirstRunLoaded: the same + module loads)
                    cold_suite {VARIANT: {ms, speedup_vs_serial, jobs}}}},
                      (BM_ColdSuite/<workload>/VARIANT, a cold suite's programs: serial and pch in one
                       process, parallel:N and parallel_pch:N by `cubby warm -j N` from the suite's
                       manifest; speedup_vs_serial = serial ms / VARIANT ms of the same run; jobs:
                       the workers `cubby warm` ran, parallel variants only)
  recovery {WORKLOAD: {METHOD: accuracy in [0, 1]}},
  suite {SUITE: {cold_s, warm_s, ratio, note, edit_s, edit_ratio, edit_serial_s,
                 RUN_hits, RUN_misses, RUN_compile_saved_s (RUN: cold, warm, edit, edit_serial)}},
    (edit_*: whole_suite.py's run after a header edit with the manifest present, prefetch on;
     edit_ratio = cold_s / edit_s; edit_serial_s: the same with CUBBY_PREFETCH=0; each optional;
     RUN_*: what each run added to the store's stats, whole_suite.py --cubby; optional)
    gtest-examples (--suite-timing: ci/suite-timing.sh's JSON) adds its fleet simulation of
    test_mdspan_transform when it ran: fleet_s and fleet_second_s (a fresh store's first run,
    served by Redis, and its second run), fleet_over_warm (first run / local warm run),
    cold_over_fleet, fleet_remote_hits, fleet_runs
  load {start, end}: the 1-, 5- and 15-minute load averages when cubby_bench started (its Google
    Benchmark context's load_avg) and when this report was written (/proc/loadavg, after every
    benchmark of the run); each absent where unknown; the dashboard says whether the run was under load
  skipped {BENCHMARK: reason}, goals [{goal, value, target, status, floor, spread}]
    (status: pass, fail, n/a (not measured here) or fault (a value below `floor`, where one is
     set: a measurement fault, not a result); spread: [p10, p90] where the value is a median)
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

import hit_vs_load
from action_benchmark import github_action_benchmark

RESULTS_SCHEMA = 1
# The cubby_bench context key `cubby_bench_schema` this reader understands.
BENCH_SCHEMAS = {"2"}

# Family -> (field in results.json, unit wanted).
FAMILIES = {
    "BM_ColdCompile": ("cold_ms", "ms"),
    "BM_WarmHitMemory": ("warm_memory_us", "us"),
    "BM_WarmHitDisk": ("warm_disk_us", "us"),
    "BM_WarmHitRemote": ("warm_remote_us", "us"),
    "BM_FleetFirstRun": ("fleet_first_run_us", "us"),
    "BM_FleetFirstRunLoaded": ("fleet_loaded_us", "us"),
    "BM_ModuleLoadBaseline": ("load_baseline_us", "us"),
    "BM_WarmHitLoaded": ("warm_loaded_us", "us"),
    "BM_KeyDerive": ("key_derive_us", "us"),
}
SPEEDUPS = {
    "BM_WarmHitMemory": "speedup_memory",
    "BM_WarmHitDisk": "speedup_disk",
    "BM_WarmHitRemote": "speedup_remote",
    "BM_FleetFirstRun": "speedup_fleet_first_run",
    "BM_FleetFirstRunLoaded": "speedup_fleet_loaded",
    "BM_WarmHitLoaded": "speedup_loaded",
}
# Family -> {counter: field in results.json}: the other counters read.
COUNTERS = {
    "BM_WarmHitLoaded": {"ratio_vs_load_baseline": "ratio_vs_load_baseline", "hit_us": "hit_us",
                         "load_us": "load_us"},
    "BM_FleetFirstRun": {"ratio_vs_local_warm": "fleet_ratio_vs_local_warm",
                         "served_ratio_vs_local_warm": "fleet_served_ratio_vs_local_warm"},
    "BM_FleetFirstRunLoaded": {"ratio_vs_local_warm": "fleet_loaded_ratio_vs_local_warm"},
}
# BM_ColdSuite/<workload>/<variant>: the variants' order in tables and charts (then any other).
COLD_SUITE_ORDER = ("serial", "pch", "parallel", "parallel_pch")
# Google Benchmark's own name parts of the form key:value (not a variant such as parallel:2).
BENCHMARK_SUFFIXES = ("iterations", "repeats", "min_time", "min_warmup_time", "threads")
# whole_suite.py's optional runs after a header edit: JSON key -> record key.
SUITE_EDIT = {"edit_s": "edit_s", "edit_ratio": "edit_ratio", "edit_serial_s": "edit_serial_s"}
# whole_suite.py --cubby: what each run added to the store's stats (RUN_hits, RUN_misses, RUN_compile_saved_s).
SUITE_RUNS = ("cold", "warm", "edit", "edit_serial")
SUITE_STATS = tuple(f"{run}_{key}" for run in SUITE_RUNS for key in ("hits", "misses", "compile_saved_s"))
# ci/suite-timing.sh's fleet simulation (test_mdspan_transform): timing.json key -> record key.
SUITE_FLEET = {"fleet_s": "fleet_s", "fleet_second_s": "fleet_second_s", "fleet_over_warm": "fleet_over_warm",
               "cold_over_fleet": "cold_over_fleet", "fleet_remote_hits": "fleet_remote_hits",
               "fleet_runs": "fleet_runs"}
TO_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def warn(message: str) -> None:
    print(f"[bench report] {message}", file=sys.stderr)


def load_json(path: Path | None, what: str) -> dict | None:
    """The JSON object in `path`, or None (with a message) when it is absent or unreadable."""
    if path is None:
        return None
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        warn(f"no {what} at {path}: skipped")
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        warn(f"{what} {path} is not valid JSON ({error}); skipped: re-run the benchmark to regenerate it")
        return None
    if not isinstance(data, dict):
        warn(f"{what} {path} is not a JSON object; skipped: re-run the benchmark to regenerate it")
        return None
    return data


def split_name(name: str) -> tuple[str, str, str]:
    """'BM_X/work/load/iterations:3/real_time' -> ('BM_X', 'work/load', ''); NameRecovery and
    ColdSuite -> (family, workload, method or variant, e.g. 'parallel:2'). Google Benchmark's own
    suffixes (iterations:N and its other key:value parts, real_time, ...) go."""
    parts = [p for p in name.split("/")
             if p.partition(":")[0] not in BENCHMARK_SUFFIXES and p not in ("real_time", "process_time", "manual_time")]
    family = parts[0] if parts else name
    rest = parts[1:]
    if family in ("BM_NameRecovery", "BM_ColdSuite") and len(rest) >= 2:
        return family, "/".join(rest[:-1]), rest[-1]
    return family, "/".join(rest), ""


def cold_suite_order(variant: str) -> tuple:
    """Sort key of a BM_ColdSuite variant: serial, pch, parallel:N, parallel_pch:N (N ascending)."""
    kind, _, jobs = variant.partition(":")
    rank = COLD_SUITE_ORDER.index(kind) if kind in COLD_SUITE_ORDER else len(COLD_SUITE_ORDER)
    return (rank, int(jobs) if jobs.isdigit() else 0, variant)


def read_cold_suite(bench: dict, record: dict, workload: str, variant: str) -> bool:
    """Adds one BM_ColdSuite/<workload>/<variant> run to record["workloads"][workload]["cold_suite"]."""
    time = finite(bench.get("real_time"))
    scale = TO_SECONDS.get(bench.get("time_unit", "ns"))
    if time is None or scale is None or not workload or not variant:
        warn(f"{bench['name']}: no usable real_time/time_unit; skipped")
        return False
    entry = record["workloads"].setdefault(workload, {})
    row = {"ms": time * scale / TO_SECONDS["ms"]}
    for counter in ("speedup_vs_serial", "jobs"):
        if finite(bench.get(counter)) and bench[counter] > 0:
            row[counter] = bench[counter]
    entry.setdefault("cold_suite", {})[variant] = row
    if finite(bench.get("programs")) and bench["programs"] > 0:
        entry.setdefault("programs", bench["programs"])
    return True


def finish_cold_suite(record: dict) -> None:
    """Orders each workload's BM_ColdSuite variants and sets speedup_vs_serial from the serial time
    of the same record (the same run), where there is one."""
    for entry in record["workloads"].values():
        rows = entry.get("cold_suite")
        if not rows:
            continue
        serial = rows.get("serial", {}).get("ms")
        for row in rows.values():
            if serial and row["ms"] > 0:
                row["speedup_vs_serial"] = serial / row["ms"]
        entry["cold_suite"] = {v: rows[v] for v in sorted(rows, key=cold_suite_order)}


def finite(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def read_bench(data: dict, record: dict, source: str) -> int:
    """Adds the benchmarks of one Google Benchmark JSON to `record`; returns how many were used."""
    context = data.get("context") if isinstance(data.get("context"), dict) else {}
    schema = str(context.get("cubby_bench_schema", ""))
    benchmarks = data.get("benchmarks")
    if not isinstance(benchmarks, list):
        warn(f"{source}: no 'benchmarks' list (not Google Benchmark JSON?); skipped")
        return 0
    if source == "cubby_bench" and schema not in BENCH_SCHEMAS:
        warn(f"{source}: written by another version of cubby_bench (cubby_bench_schema "
             f"'{schema or 'absent'}', this reader knows {sorted(BENCH_SCHEMAS)}); reading the "
             "families it recognises; rebuild and re-run ci/bench.sh for a full record")
    machine = record["machine"]
    for key in ("arch", "nvrtc"):
        if context.get(key) and not machine.get(key):
            machine[key] = str(context[key])
    if "gpu" in context and source == "cubby_bench":
        machine["gpu"] = context.get("gpu") == "yes"
    if source == "cubby_bench" and isinstance(context.get("date"), str):
        record["date"] = context["date"]  # when the benchmark ran, not when it was summarised
    if context.get("host_name") and not machine.get("host"):
        machine["host"] = str(context["host_name"])
    if context.get("num_cpus") and not machine.get("cpus"):
        machine["cpus"] = context["num_cpus"]
    start = load_average(context.get("load_avg")) if source == "cubby_bench" else None
    if start is not None:
        record.setdefault("load", {})["start"] = start  # when the benchmark started
    used = 0
    hit_vs_load_runs: dict[str, list] = {}  # BM_HitVsLoad repetitions, combined at the end
    for bench in benchmarks:
        if not isinstance(bench, dict) or not isinstance(bench.get("name"), str):
            continue
        if bench.get("run_type", "iteration") != "iteration":
            continue  # aggregates (mean/median) of --benchmark_repetitions: the runs suffice
        family, workload, method = split_name(bench["name"])
        if bench.get("error_occurred") or bench.get("skipped"):
            reason = bench.get("error_message") or bench.get("skip_message") or "skipped"
            record["skipped"][f"{family}/{workload}" + (f"/{method}" if method else "")] = reason
            continue
        if family == "BM_NameRecovery":
            if bench.get("total") == 0:
                continue  # a timing reference (e.g. load_only) that recovers no name
            accuracy = finite(bench.get("accuracy"))
            if accuracy is None and finite(bench.get("total")):
                accuracy = (finite(bench.get("correct")) or 0) / bench["total"] if bench["total"] else None
            if accuracy is None:
                warn(f"{bench['name']}: no 'accuracy' counter; skipped")
                continue
            record["recovery"].setdefault(workload, {})[method] = accuracy / 100 if accuracy > 1 else accuracy
            used += 1
            continue
        if family == "BM_ColdSuite":
            used += read_cold_suite(bench, record, workload, method)
            continue
        if family == hit_vs_load.FAMILY:
            if hit_vs_load.collect(bench, hit_vs_load_runs, workload):
                used += 1
            else:
                warn(f"{bench['name']}: no 'ratio' counter; skipped")
            continue
        if family not in FAMILIES or not workload:
            continue
        field, unit = FAMILIES[family]
        time = finite(bench.get("real_time"))
        scale = TO_SECONDS.get(bench.get("time_unit", "ns"))
        if time is None or scale is None:
            warn(f"{bench['name']}: no usable real_time/time_unit; skipped")
            continue
        entry = record["workloads"].setdefault(workload, {})
        entry[field] = time * scale / TO_SECONDS[unit]
        for counter in ("cubin_bytes", "name_expressions", "programs"):
            if finite(bench.get(counter)) and bench[counter] > 0:
                entry[counter] = bench[counter]
        if family in SPEEDUPS and finite(bench.get("speedup_vs_cold")):
            entry[SPEEDUPS[family]] = bench["speedup_vs_cold"]
        for counter, key in COUNTERS.get(family, {}).items():
            if finite(bench.get(counter)):
                entry[key] = bench[counter]
        used += 1
    hit_vs_load.finish(hit_vs_load_runs, record)
    return used


def read_suite(data: dict, record: dict) -> int:
    suites = data.get("suites")
    if data.get("schema") != 1 or not isinstance(suites, dict):
        warn("suite timing JSON is not schema 1 with a 'suites' object; skipped: re-run bench/suite/whole_suite.py")
        return 0
    used = 0
    for name, suite in suites.items():
        if not isinstance(suite, dict):
            continue
        if suite.get("skipped"):
            record["skipped"][f"suite/{name}"] = str(suite["skipped"])
            continue
        cold, warm = finite(suite.get("cold_s")), finite(suite.get("warm_s"))
        if cold is None or warm is None:
            continue
        record["suite"][name] = {"cold_s": cold, "warm_s": warm, "ratio": cold / warm if warm > 0 else None}
        for field, key in SUITE_EDIT.items():  # the run after a header edit (optional)
            if finite(suite.get(field)) is not None:
                record["suite"][name][key] = suite[field]
        for field in SUITE_STATS:  # each run's hits, misses and compile time saved (optional)
            if finite(suite.get(field)) is not None:
                record["suite"][name][field] = suite[field]
        used += 1
    return used


def read_suite_timing(data: dict, record: dict) -> int:
    """ci/suite-timing.sh's timing.json (the example GoogleTest suite, cold then warm)."""
    cold = data.get("cold_s", {}).get("suite") if isinstance(data.get("cold_s"), dict) else None
    warm = data.get("warm_s", {}).get("suite") if isinstance(data.get("warm_s"), dict) else None
    if finite(cold) is None or finite(warm) is None:
        warn("suite-timing JSON has no cold_s.suite / warm_s.suite numbers; skipped: re-run ci/suite-timing.sh")
        return 0
    suite = {"cold_s": cold, "warm_s": warm, "ratio": cold / warm if warm > 0 else None,
             "note": str(data.get("scope", ""))}
    # The fleet simulation: per binary ({"test_mdspan_transform": seconds}) or plain numbers.
    for field, key in SUITE_FLEET.items():
        value = data.get(field)
        if isinstance(value, dict):
            value = value.get("test_mdspan_transform")
        if finite(value) is not None:
            suite[key] = value
    if data.get("fleet_skipped"):
        record["skipped"]["suite/gtest-examples/fleet"] = str(data["fleet_skipped"])
    if data.get("fleet_problems"):
        warn(f"suite-timing: {len(data['fleet_problems'])} check(s) of what served its fleet runs failed "
             f"(first: {data['fleet_problems'][0]}); its fleet figures are reported anyway")
    record["suite"]["gtest-examples"] = suite
    return 1


def load_average(values) -> list[float] | None:
    """[1 min, 5 min, 15 min] from a Google Benchmark context's load_avg or /proc/loadavg's
    fields, or None when they are not three finite numbers >= 0."""
    try:
        numbers = [float(v) for v in list(values)[:3]]
    except (TypeError, ValueError):
        return None
    return numbers if len(numbers) == 3 and all(math.isfinite(v) and v >= 0 for v in numbers) else None


def proc_loadavg(path: Path = Path("/proc/loadavg")) -> list[float] | None:
    """The load averages now (/proc/loadavg), or None where there is none (not Linux)."""
    try:
        return load_average(path.read_text().split())
    except OSError:
        return None


def git_commit(root: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        commit = out.stdout.strip() or "unknown"
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo, else platform), or ""."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "cpu model") and value.strip():
                return " ".join(value.split())
    except OSError:
        pass
    return platform.processor() or ""


def gpu_name() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    except (OSError, subprocess.SubprocessError, IndexError):
        return ""


def evaluate_goals(record: dict) -> list[dict]:
    """The issue's goals, checked against this record: pass, fail, or n/a (not measured here)."""
    w = record["workloads"]
    goals = []

    def goal(text, value, target, ok):
        status = "n/a" if value is None else ("pass" if ok(value) else "fail")
        goals.append({"goal": text, "value": value, "target": target, "status": status})

    goal("mdspan50 warm disk hit >= 1000x faster than cold", w.get("mdspan50", {}).get("speedup_disk"),
         1000, lambda v: v >= 1000)
    goal("tiny warm disk hit <= 20 us (no module load)", w.get("tiny", {}).get("warm_disk_us"),
         20, lambda v: v <= 20)
    # The hit path over the bare load: only the interleaved family (BM_HitVsLoad) makes a goal; the
    # ratio of BM_WarmHitLoaded and BM_ModuleLoadBaseline, measured apart, does not.
    goals += hit_vs_load.goals(w)
    ratios = [s["ratio"] for s in record["suite"].values() if s.get("ratio")]
    goal("whole suite warm >= 20x faster than cold", min(ratios) if ratios else None, 20, lambda v: v >= 20)
    # The fleet simulation (Redis): a fresh store's first run against a local warm run, and cold.
    examples = record["suite"].get("gtest-examples", {})
    goal("example suite: fleet first run (fresh store served by Redis) <= 1.5x local warm run",
         examples.get("fleet_over_warm"), 1.5, lambda v: v <= 1.5)
    goal("example suite: fleet first run (fresh store served by Redis) >= 100x faster than cold",
         examples.get("cold_over_fleet"), 100, lambda v: v >= 100)
    for name in ("mdspan50", "mdspan-suite"):
        goal(f"{name} BM_FleetFirstRun (fresh store served by Redis) >= 100x faster than cold",
             w.get(name, {}).get("speedup_fleet_first_run"), 100, lambda v: v >= 100)
        goal(f"{name} BM_FleetFirstRunLoaded <= 1.5x BM_WarmHitLoaded (GPU, Redis)",
             w.get(name, {}).get("fleet_loaded_ratio_vs_local_warm"), 1.5, lambda v: v <= 1.5)
    return goals


def fmt_time(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    seconds = value * TO_SECONDS[unit]
    for name, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {name}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else (f"{value:,.0f}x" if value >= 100 else f"{value:.2f}x")


def table(record: dict) -> str:
    rows = [("workload", "cold", "warm memory", "warm disk", "speedup (disk)", "load baseline",
             "warm + load", "hit/load")]
    apart = False  # a hit/load ratio of two separately measured families is shown, marked
    for name, w in record["workloads"].items():
        ratio = fmt_ratio(w.get("hit_load_ratio"))
        if w.get("hit_load_ratio") is None and w.get("ratio_vs_load_baseline") is not None:
            ratio, apart = fmt_ratio(w["ratio_vs_load_baseline"]) + " *", True
        elif hit_vs_load.is_fault(w.get("hit_load_ratio")):
            ratio += " FAULT"
        rows.append((name, fmt_time(w.get("cold_ms"), "ms"), fmt_time(w.get("warm_memory_us"), "us"),
                     fmt_time(w.get("warm_disk_us"), "us"), fmt_ratio(w.get("speedup_disk")),
                     fmt_time(w.get("load_baseline_us"), "us"), fmt_time(w.get("warm_loaded_us"), "us"),
                     ratio))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r))
             for r in rows]
    lines.insert(1, "  ".join("-" * n for n in widths))
    if apart:
        lines.append("* BM_WarmHitLoaded / BM_ModuleLoadBaseline, measured apart: no goal (BM_HitVsLoad is)")
    interleaved = hit_vs_load.table_lines(record["workloads"])
    if interleaved:
        lines += [""] + interleaved
    cold_suite = [(name, w["cold_suite"]) for name, w in record["workloads"].items() if w.get("cold_suite")]
    if cold_suite:
        lines += ["", "cold suite (BM_ColdSuite: serial and pch in one process, parallel*:N by `cubby warm -j N`; "
                      "speedup over serial)"]
        for name, rows in cold_suite:
            parts = []
            for variant, row in rows.items():
                part = f"{variant} {fmt_time(row['ms'], 'ms')}"
                if variant != "serial" and row.get("speedup_vs_serial") is not None:
                    part += f" = {fmt_ratio(row['speedup_vs_serial'])}"
                if row.get("jobs") is not None:
                    part += f" ({row['jobs']:.0f} jobs)"
                parts.append(part)
            lines.append(f"  {name}: " + "; ".join(parts))
    if record["suite"]:
        edit = any(s.get("edit_s") is not None for s in record["suite"].values())
        lines += ["", "whole suite                 1st run (cold)   2nd run (warm)   ratio"
                  + ("   after header edit   ratio" if edit else "")]
        for name, s in record["suite"].items():
            line = (f"{name:<26}{fmt_time(s['cold_s'], 's'):>16}{fmt_time(s['warm_s'], 's'):>17}"
                    f"{fmt_ratio(s.get('ratio')):>9}")
            if edit:
                line += f"{fmt_time(s.get('edit_s'), 's'):>20}{fmt_ratio(s.get('edit_ratio')):>9}"
            lines.append(line)
        if edit:
            lines.append("  (after header edit: every key misses, the suite's manifest is kept; prefetch on)")
        for name, s in record["suite"].items():
            runs = []
            for run in SUITE_RUNS:
                hits, misses = s.get(f"{run}_hits"), s.get(f"{run}_misses")
                if hits is None or misses is None:
                    continue
                rate = f" = {100 * hits / (hits + misses):.0f}%" if hits + misses else ""
                saved = s.get(f"{run}_compile_saved_s")
                runs.append(f"{run} {hits:.0f} hits / {misses:.0f} misses{rate}"
                            + (f", {fmt_time(saved, 's')} compile saved" if saved else ""))
            if runs:
                lines.append(f"  {name} lookups: " + "; ".join(runs))
    fleet = []
    for name, w in record["workloads"].items():
        for family, field, ratio, speedup, local in (
                ("BM_FleetFirstRun", "fleet_first_run_us", "fleet_ratio_vs_local_warm", "speedup_fleet_first_run",
                 "the local warm run (BM_WarmHitDisk)"),
                ("BM_FleetFirstRunLoaded", "fleet_loaded_us", "fleet_loaded_ratio_vs_local_warm",
                 "speedup_fleet_loaded", "the local warm run + loads (BM_WarmHitLoaded)")):
            if w.get(field) is not None:
                fleet.append(f"  {name} {family}: {fmt_time(w[field], 'us')} = {fmt_ratio(w.get(ratio))} "
                             f"{local}, {fmt_ratio(w.get(speedup))} faster than cold")
    for name, s in record["suite"].items():
        if s.get("fleet_s") is not None:
            fleet.append(f"  suite {name} (test_mdspan_transform): {fmt_time(s['fleet_s'], 's')} = "
                         f"{fmt_ratio(s.get('fleet_over_warm'))} the local warm run, "
                         f"{fmt_ratio(s.get('cold_over_fleet'))} faster than cold; second run "
                         f"{fmt_time(s.get('fleet_second_s'), 's')}")
    if fleet:
        lines += ["", "fleet first run (fresh store served by Redis)"] + fleet
    if record["recovery"]:
        lines += ["", "name recovery accuracy"]
        for name, methods in record["recovery"].items():
            lines.append(f"  {name}: " + ", ".join(f"{m} {a * 100:.1f}%" for m, a in sorted(methods.items())))
    if record["skipped"]:
        lines += ["", "skipped"]
        reasons: dict[str, list[str]] = {}
        for bench, reason in record["skipped"].items():
            reasons.setdefault(reason, []).append(bench)
        for reason, benches in reasons.items():
            lines.append(f"  {', '.join(benches)}: {reason}")
    load = record.get("load") or {}
    cpus = record["machine"].get("cpus")
    lines += ["", "load average (1 min) at the start " + (f"{load['start'][0]:.2f}" if load.get("start") else "unknown")
              + ", at the end " + (f"{load['end'][0]:.2f}" if load.get("end") else "unknown")
              + (f", on {cpus} CPUs" if cpus else "")]
    lines += ["", "goals"]
    for g in record["goals"]:
        value = "-" if g["value"] is None else f"{g['value']:.4g}"
        spread = g.get("spread") or [None, None]
        if g["value"] is not None and None not in spread:
            value += f", p10-p90 {spread[0]:.4g}-{spread[1]:.4g}"
        fault = f"; below {g['floor']}: a measurement fault, not a result" if g["status"] == "fault" else ""
        lines.append(f"  [{g['status']:>4}] {g['goal']} (measured {value}, target {g['target']}{fault})")
    return "\n".join(lines)


# The verdict on this run against this machine's earlier runs (bench/dashboard/verdict.mjs has the
# dashboard's, with the same rules): per headline metric (cold compile and warm disk hit of each
# workload, lower is better), the median m of its values in the previous PREVIOUS_RUNS runs that
# measured it (at least MIN_PREVIOUS), sigma = max(1.4826 x MAD, 2% of m), band m +- 3 sigma.
PREVIOUS_RUNS, MIN_PREVIOUS, BAND_SIGMAS, MIN_SIGMA = 5, 3, 3, 0.02


def same_machine(a: dict, b: dict) -> bool:
    """Whether two records come from one machine: the same label, else the same id (records
    without either are never this run's machine)."""
    ma, mb = a.get("machine") or {}, b.get("machine") or {}
    if ma.get("label") or mb.get("label"):
        return bool(ma.get("label")) and ma.get("label") == mb.get("label")
    return bool(ma.get("id")) and ma.get("id") == mb.get("id")


def headline_metrics(record: dict) -> dict[str, float]:
    metrics = {}
    for name, w in (record.get("workloads") or {}).items():
        for label, key, scale in (("cold compile", "cold_ms", 1e3), ("warm disk hit", "warm_disk_us", 1.0)):
            value = (w or {}).get(key)
            if isinstance(value, (int, float)) and value > 0:
                metrics[f"{name} {label}"] = value * scale
    return metrics


def _median(values: list[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def verdict(record: dict, history: list[dict]) -> tuple[str, str]:
    """(status, text) of this run against the earlier runs of its machine in `history` (oldest
    first): "baseline" (its first run), "none" (too few earlier runs measured the same),
    "slower" (a metric above its noise band), "goals-fail" (within the bands but goals fail),
    "fast" (within the bands and every goal met)."""
    earlier = [headline_metrics(r) for r in history if r is not record and same_machine(r, record)]
    failed = [g["goal"] for g in record.get("goals", []) if g.get("status") == "fail"]
    failing = f"{len(failed)} goal{'s' if len(failed) != 1 else ''} fail{'s' if len(failed) == 1 else ''}: " \
              + "; ".join(failed) if failed else ""
    if not earlier:
        return "baseline", "first run: baseline recorded" + (f"; {failing}" if failing else "")
    compared, slower = 0, []
    for name, value in headline_metrics(record).items():
        previous = [m[name] for m in earlier if name in m][-PREVIOUS_RUNS:]
        if len(previous) < MIN_PREVIOUS:
            continue
        m = _median(previous)
        sigma = max(1.4826 * _median([abs(v - m) for v in previous]), MIN_SIGMA * m)
        compared += 1
        if value > m + BAND_SIGMAS * sigma:
            slower.append((value / m - 1, name))
    head = f"vs the previous runs on this machine ({len(earlier)}): "
    if slower:
        change, name = max(slower)
        return "slower", f"{head}slower by {change * 100:.0f}% (beyond its noise band): {name}" \
            + (f"; {failing}" if failing else "")
    if not compared:
        return "none", f"{head}no verdict: fewer than {MIN_PREVIOUS} of them measured what this run measured" \
            + (f"; {failing}" if failing else "")
    if failed:
        return "goals-fail", f"{head}within the noise band, but {failing}"
    return "fast", f"{head}still fast ({compared} metric{'s' if compared != 1 else ''} within the noise band)"


def read_records(paths: list[Path]) -> list[dict]:
    """The records of the history files that exist, in order (lines that do not parse skipped)."""
    records = []
    for path in paths:
        try:
            lines = path.read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict):
                records.append(item)
    return records


def machine_id() -> str:
    """This machine's identity on the dashboard: 16 hex digits of a hash of /etc/machine-id (its
    host name where there is none), so that two machines of one description stay apart."""
    try:
        seed = Path("/etc/machine-id").read_text().strip()
    except OSError:
        seed = ""
    seed = seed or platform.node()
    return hashlib.sha256(("cubby-bench:" + seed).encode()).hexdigest()[:16]


def append_history(history: Path, record: dict) -> None:
    """Appends `record`; a history file whose lines do not parse is kept and the bad lines are
    reported (the dashboard skips them too)."""
    bad = 0
    if history.exists():
        try:
            for number, line in enumerate(history.read_text().splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    if not isinstance(json.loads(line), dict):
                        raise ValueError("not an object")
                except ValueError:
                    bad += 1
                    if bad <= 3:
                        warn(f"{history}:{number}: not a JSON object; the dashboard skips it")
        except (OSError, UnicodeDecodeError) as error:
            warn(f"cannot read history {history} ({error}); appending anyway")
    else:
        warn(f"no history at {history}: starting one")
    history.parent.mkdir(parents=True, exist_ok=True)
    with history.open("a") as out:
        out.write(json.dumps(record, sort_keys=True) + "\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", type=Path, help="cubby_bench --benchmark_out JSON")
    parser.add_argument("--recovery", type=Path, help="cubby_recovery_bench JSON (BM_NameRecovery)")
    parser.add_argument("--extra-bench", type=Path, action="append", default=[],
                        help="another Google Benchmark JSON whose cubby families to read")
    parser.add_argument("--suite", type=Path, help="bench/suite/whole_suite.py JSON")
    parser.add_argument("--suite-timing", type=Path, help="ci/suite-timing.sh timing.json (example GoogleTest suite)")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--history", type=Path, help="history file to append to (none: do not append)")
    parser.add_argument("--compare-history", type=Path, action="append", default=[],
                        help="histories whose runs of this machine the verdict compares with (repeatable)")
    parser.add_argument("--commit", help="commit to record (default: git rev-parse HEAD)")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    parser.add_argument("--gpu-name", default=None, help="GPU model (default: nvidia-smi)")
    parser.add_argument("--machine-label", default=os.environ.get("CUBBY_BENCH_MACHINE") or None,
                        help="the machine's name on the dashboard (default: $CUBBY_BENCH_MACHINE; else "
                             "the dashboard derives one from the GPU, CPUs and host)")
    args = parser.parse_args(argv)

    record = {"schema": RESULTS_SCHEMA, "commit": args.commit or git_commit(args.root),
              "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
              "machine": {"gpu": False},
              "workloads": {}, "recovery": {}, "suite": {}, "skipped": {}}
    used = 0
    for path, what in [(args.bench, "cubby_bench")] + [(p, "benchmark") for p in args.extra_bench] + \
                      [(args.recovery, "cubby_recovery_bench")]:
        data = load_json(path, f"{what} JSON")
        if data is not None:
            used += read_bench(data, record, what)
    finish_cold_suite(record)
    suite = load_json(args.suite, "suite timing JSON")
    if suite is not None:
        used += read_suite(suite, record)
    timing = load_json(args.suite_timing, "ci/suite-timing.sh JSON")
    if timing is not None:
        used += read_suite_timing(timing, record)
    record["machine"].setdefault("host", platform.node())
    record["machine"].setdefault("cpus", os.cpu_count())
    record["machine"].setdefault("cpu_model", cpu_model())
    record["machine"].setdefault("id", machine_id())
    if args.machine_label:
        record["machine"]["label"] = args.machine_label
    record["machine"]["gpu_name"] = args.gpu_name if args.gpu_name is not None else \
        (gpu_name() if record["machine"]["gpu"] else "")
    end = proc_loadavg()
    if end is not None:
        record.setdefault("load", {})["end"] = end
    record["goals"] = evaluate_goals(record)
    print(table(record))
    if args.compare_history:
        status, text = verdict(record, read_records(args.compare_history))
        record["verdict"] = status
        print(f"\nverdict for this machine: {text}")
    if used == 0:
        warn("no benchmark result could be read; nothing written. Run ci/bench.sh to produce them")
        return 2

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    smaller, bigger = github_action_benchmark(record)
    gab = args.out / "github-action-benchmark"
    gab.mkdir(exist_ok=True)
    (gab / "smaller.json").write_text(json.dumps(smaller, indent=2) + "\n")
    (gab / "bigger.json").write_text(json.dumps(bigger, indent=2) + "\n")
    if args.history is not None:
        append_history(args.history, record)
    warn(f"wrote {args.out / 'results.json'} and {gab}/{{smaller,bigger}}.json"
         + (f"; appended to {args.history}" if args.history else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
