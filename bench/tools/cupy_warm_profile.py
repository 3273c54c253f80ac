#!/usr/bin/python3
"""Where a warm CuPy test session's time goes, CuPy's own cache vs cubby (issue 25's warm row):
fills both caches with one cold run each, then alternates warm runs of these configurations in
fresh pytest processes, every run under bench/tools/cupy_timer_plugin.py:

  own          CuPy's own cache (the cubby plugin off)
  cubby        the cubby plugin with --cubby-require-warm (as bench/suite/cupy_suite.py runs it)
  cubby-nopf   the same without the prefetch (--no-cubby-prefetch)
  cubby-keys   cubby, each Cache.compile preceded by a timed Cache.key of the same request
  cubby-fill   the plugin without require-warm or prefetch (what fills cubby's store first)

and finally one run of `own` and `cubby` under cProfile (the top functions by cumulative and own
time; with --xdist, each process of the session is profiled and the workers' profiles are added
up). Writes one JSON object (--out): per run the process wall time, its CPU and its main thread's
(cpu_s, main_thread_cpu_s), the session's phase marks
and the per-module call totals, and under --xdist the workers' (`workers`: their phases in
seconds from the controller's launch, median and latest over the workers; their CPU time, test
time and module calls added up); per configuration the medians; `own_over`: CuPy's own median
process time over each configuration's (>= 1: as fast as CuPy's own cache or faster).

  cupy_warm_profile.py --suite tests/python/gpu/test_cupy_mdspan.py --work DIR --out FILE
                       [--rounds 5] [--configs own,cubby,...] [--xdist N] [--no-profile]
"""
from __future__ import annotations

import argparse
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = {
    "own": [],
    "cubby": ["--cubby-require-warm"],
    "cubby-nopf": ["--cubby-require-warm", "--no-cubby-prefetch"],
    "cubby-keys": ["--cubby-require-warm"],
    "cubby-fill": ["--no-cubby-prefetch"],
}
PHASES = ("configure", "collected", "loop_start", "loop_end", "unconfigure")


def workers_summary(timer: Path, launched: float) -> dict:
    """The xdist workers' records ($CUPY_TIMER_OUT.<id>) of one run, phases in seconds from the
    controller's launch `launched` (epoch): median and latest over the workers."""
    records = []
    for path in sorted(timer.parent.glob(timer.name + ".gw*")):
        try:
            records.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    if not records:
        return {}
    phases = {"start": [r["process_start_epoch"] - launched for r in records]}
    for mark in PHASES:
        phases[mark] = [r["marks_epoch"][mark] - launched for r in records
                        if mark in r.get("marks_epoch", {})]
    out = {"count": len(records),
           "median_s": {k: round(statistics.median(v), 4) for k, v in phases.items() if v},
           "latest_s": {k: round(max(v), 4) for k, v in phases.items() if v},
           "cpu_s_sum": round(sum(r.get("cpu_s", 0.0) for r in records), 4),
           "tests_call_s_sum": round(sum(r.get("tests_s", {}).get("call", 0.0)
                                         for r in records), 4),
           "tests_setup_s_sum": round(sum(r.get("tests_s", {}).get("setup", 0.0)
                                          for r in records), 4)}
    for call in ("module", "cubby_compile"):
        out[call + "_total_s_sum"] = round(sum(r["calls"][call]["total_s"] for r in records), 4)
    return out


def pytest_run(args, work: Path, config: str, profile: Path | None = None) -> dict:
    own = config == "own"
    timer = work / "timer.json"
    for path in work.glob("timer.json*"):
        path.unlink()
    env = dict(os.environ, CUPY_CACHE_DIR=str(work / ("own" if own else "cupy-unused")),
               CUPY_TIMER_OUT=str(timer),
               CUPY_TIMER_KEYS="1" if config == "cubby-keys" else "0",
               PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
    env.pop("CUBBY_DIR", None)
    plugin = (["-p", "no:cubby"] if own
              else ["-p", "cubby.plugin", f"--cubby-dir={work / 'store'}", *CONFIGS[config]])
    if profile is not None and args.xdist:  # every process profiles itself (the timer plugin)
        shutil.rmtree(profile, ignore_errors=True)
        profile.mkdir(parents=True)
        env["CUPY_TIMER_PROFILE"] = str(profile)
        profile = None
    runner = [sys.executable] + (["-m", "cProfile", "-o", str(profile)] if profile else [])
    xdist = ["-n", str(args.xdist)] if args.xdist else []
    command = [*runner, "-m", "pytest", args.suite, "-q", "-p", "no:cacheprovider",
               "-p", "no:random_order", "-p", "cupy_timer_plugin", *plugin, *xdist]
    launched = time.time()
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    run = {"config": config, "seconds": round(seconds, 4), "exit": done.returncode}
    if done.returncode:
        run["output"] = (done.stdout + done.stderr)[-3000:]
    try:
        run.update(json.loads(timer.read_text()))
    except (OSError, ValueError):
        pass
    if args.xdist:
        run["workers"] = workers_summary(timer, launched)
        run["controller_start_s"] = round(run.get("process_start_epoch", launched) - launched, 4)
    print(f"[profile] {config}: {seconds:.3f} s (exit {done.returncode})", file=sys.stderr,
          flush=True)
    return run


def top(profile: Path, sort: str, count: int = 35) -> str:
    """The top functions of a profile, or of the workers' profiles (a folder) added up."""
    text = io.StringIO()
    files = sorted(str(p) for p in profile.glob("gw*.prof")) if profile.is_dir() else [str(profile)]
    if not files:
        return "(no profile)"
    pstats.Stats(*files, stream=text).strip_dirs().sort_stats(sort).print_stats(count)
    return text.getvalue()[-12000:]


def medians(runs: list) -> dict:
    out = {}
    for config in CONFIGS:
        mine = [run for run in runs if run["config"] == config and run["exit"] == 0]
        if not mine:
            continue
        row = {"runs": len(mine), "seconds": statistics.median(r["seconds"] for r in mine)}
        for mark in PHASES:
            values = [r["marks_s"][mark] for r in mine if mark in r.get("marks_s", {})]
            if values:
                row[mark] = round(statistics.median(values), 4)
        with_workers = [r["workers"] for r in mine if r.get("workers")]
        if with_workers:
            row["workers"] = {"median_s": {}, "latest_s": {}}
            for which in ("median_s", "latest_s"):
                for phase in with_workers[0][which]:
                    values = [w[which][phase] for w in with_workers if phase in w[which]]
                    row["workers"][which][phase] = round(statistics.median(values), 4)
            for field in (f for f in with_workers[0] if f.endswith("_sum")):  # workers_summary's
                row["workers"][field] = round(statistics.median(w[field] for w in with_workers), 4)
        for field in ("cpu_s", "main_thread_cpu_s"):  # the process's, its main thread's
            values = [r[field] for r in mine if field in r]
            if values:
                row[field] = round(statistics.median(values), 4)
        for call in ("module", "cubby_compile", "cubby_key"):
            values = [r["calls"][call]["total_s"] for r in mine
                      if r.get("calls", {}).get(call, {}).get("count")]
            if values:
                row[call + "_total_s"] = round(statistics.median(values), 4)
        out[config] = row
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", required=True)
    parser.add_argument("--work", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help="the configurations to alternate (default: all four)")
    parser.add_argument("--xdist", type=int, default=0,
                        help="run every session under pytest-xdist with N workers (each worker "
                        "records its own phases and calls: the run's `workers`)")
    parser.add_argument("--no-profile", action="store_true")
    args = parser.parse_args()
    work = args.work
    result = {"suite": args.suite, "runs": [], "fill": []}
    if not (work / "filled").exists():
        for path in ("own", "cupy-unused", "store"):
            shutil.rmtree(work / path, ignore_errors=True)
        work.mkdir(parents=True, exist_ok=True)
        result["fill"] = [pytest_run(args, work, "own"), pytest_run(args, work, "cubby-fill")]
        (work / "filled").touch()
    names = [name for name in args.configs.split(",") if name]
    unknown = sorted(set(names) - set(CONFIGS))
    if unknown:
        parser.error(f"unknown configuration(s) {', '.join(unknown)}; known: {', '.join(CONFIGS)}")
    for round_ in range(args.rounds):
        order = names[round_ % len(names):] + names[:round_ % len(names)]
        for config in order:
            result["runs"].append(pytest_run(args, work, config))
        result["medians"] = medians(result["runs"])
        args.out.write_text(json.dumps(result, indent=1))
    if not args.no_profile:
        result["profiles"] = {}
        for config in ("own", "cubby"):
            profile = work / (f"{config}-profiles" if args.xdist else f"{config}.prof")
            pytest_run(args, work, config, profile)
            result["profiles"][config] = {"cumulative": top(profile, "cumulative"),
                                          "tottime": top(profile, "tottime")}
    result["medians"] = medians(result["runs"])
    own = result["medians"].get("own", {}).get("seconds")
    if own:  # the warm row's ratio: CuPy's own / each configuration (>= 1: cubby as fast or faster)
        result["own_over"] = {config: round(own / row["seconds"], 3)
                              for config, row in result["medians"].items() if config != "own"}
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: result.get(k) for k in ("medians", "own_over")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
