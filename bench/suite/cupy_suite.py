#!/usr/bin/python3
"""The CuPy suite row of the whole-suite benchmark: a CuPy test file (default
tests/python/gpu/test_cupy_mdspan.py: 25 RawModules of mdspan kernels with name expressions, 100
tests) with CuPy's own kernel cache and compiled through cubby (the pytest plugin's CuPy adapter),
in fresh pytest processes, configurations alternating every round:

  cold     an empty CuPy cache folder / an empty cubby store
  warm     the same folder / store again (cubby's with --cubby-require-warm)
  edit     cubby only: the store's entries/ deleted, its manifests (recipes) kept -- the state after
           a header edit or a toolchain upgrade -- with the plugin's prefetch on. CuPy's own cache
           has no correct answer there (it would serve stale kernels), so its cold run is what a
           correct cache must redo: edit_speedup = CuPy's cold / cubby's edit.
  ...-xN   the same under pytest-xdist (-n N)
  overhead a one-test file: plain pytest vs the plugin configured (--cubby-dir), alternating
  warm     (--parts warm) one cold run each way, then --warm-repeat warm runs each way,
           alternating: the warm rows' medians over more runs than the rounds give

  cupy_suite.py --out cupy_suite.json --work DIR [--suite FILE] [--repeat 2] [--xdist 8]
                [--parts alone,xdist,overhead,warm] [--overhead-repeat 7]
                [--warm-repeat 5] [--deadline SECONDS]

Writes whole_suite.py's schema 1 (bench/tools/bench_report.py --suite reads it: rows cupy-own,
cupy-cubby, cupy-own-xN, cupy-cubby-xN; medians of the rounds), plus "goals" and "runs". The
file is rewritten after every run, and no run starts after --deadline seconds, so a time limit
keeps what was measured. Needs CuPy, a GPU and the cubby package (PYTHONPATH) with libcubby.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOALS = (  # (name, numerator row.field, denominator row.field, at least)
    ("cold alone: CuPy's own / cubby >= 1.5", "cupy-own.cold_s", "cupy-cubby.cold_s", 1.5),
    ("after a header edit: CuPy's own cold / cubby edit >= 6", "cupy-own.cold_s",
     "cupy-cubby.edit_s", 6.0),
    ("cold -nN: CuPy's own / cubby >= 1.3", "cupy-own{x}.cold_s", "cupy-cubby{x}.cold_s", 1.3),
    ("warm alone: CuPy's own / cubby >= 1", "cupy-own.warm_s", "cupy-cubby.warm_s", 1.0),
    ("warm -nN: CuPy's own / cubby >= 1", "cupy-own{x}.warm_s", "cupy-cubby{x}.warm_s", 1.0),
)


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work = Path(args.work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.started = time.monotonic()
        self.runs: list = []

    def time_left(self) -> bool:
        return time.monotonic() - self.started < self.args.deadline

    def pytest(self, row: str, run: str, suite: str, cupy_dir: Path, store: Path | None,
               *extra: str) -> None:
        """One fresh pytest process; `store` None: CuPy's own cache, without the cubby plugin."""
        env = dict(os.environ, CUPY_CACHE_DIR=str(cupy_dir))
        env.pop("CUBBY_DIR", None)
        plugin = (["-p", "no:cubby"] if store is None
                  else ["-p", "cubby.plugin", f"--cubby-dir={store}"])
        command = [sys.executable, "-m", "pytest", suite, "-q", "-p", "no:cacheprovider",
                   "-p", "no:random_order",  # it needs the cache provider
                   *plugin, *extra]
        start = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        tail = [line for line in done.stdout.splitlines()
                if line.startswith(("hits:", "cupy:", "prefetch:", "duplicate"))
                or " passed" in line or " failed" in line]
        self.runs.append({"row": row, "run": run, "seconds": round(seconds, 3),
                          "exit": done.returncode, "summary": tail,
                          **({"output": (done.stdout + done.stderr)[-3000:]}
                             if done.returncode else {})})
        print(f"[cupy suite] {row} {run}: {seconds:.2f} s (exit {done.returncode})",
              file=sys.stderr, flush=True)
        self.write()

    def rounds(self, suffix: str, extra: tuple) -> None:
        for round_ in range(self.args.repeat):
            if not self.time_left():
                return
            own_dir = self.work / f"own{suffix}-{round_}"
            store = self.work / f"store{suffix}-{round_}"
            unused = self.work / f"cupy-unused{suffix}-{round_}"
            for path in (own_dir, store, unused):
                shutil.rmtree(path, ignore_errors=True)
            own = [("cold", own_dir, None, ()), ("warm", own_dir, None, ())]
            ours = [("cold", unused, store, ()), ("warm", unused, store, ("--cubby-require-warm",)),
                    ("edit", unused, store, ())]
            pairs = [(f"cupy-own{suffix}", own), (f"cupy-cubby{suffix}", ours)]
            for row, steps in (pairs if round_ % 2 == 0 else pairs[::-1]):
                for run, cupy_dir, at, more in steps:
                    if run == "edit":
                        shutil.rmtree(store / "entries", ignore_errors=True)
                    self.pytest(row, run, self.args.suite, cupy_dir, at, *extra, *more)

    def warm_pairs(self) -> None:
        own_dir, store = self.work / "own-warm", self.work / "store-warm"
        unused = self.work / "cupy-unused-warm"
        for path in (own_dir, store, unused):
            shutil.rmtree(path, ignore_errors=True)
        self.pytest("cupy-own", "fill", self.args.suite, own_dir, None)
        self.pytest("cupy-cubby", "fill", self.args.suite, unused, store)
        steps = [("cupy-own", own_dir, None, ()),
                 ("cupy-cubby", unused, store, ("--cubby-require-warm",))]
        for round_ in range(self.args.warm_repeat):
            if not self.time_left():
                return
            for row, cupy_dir, at, more in (steps if round_ % 2 == 0 else steps[::-1]):
                self.pytest(row, "warm", self.args.suite, cupy_dir, at, *more)

    def overhead(self) -> None:
        suite = self.work / "overhead" / "test_nothing.py"
        suite.parent.mkdir(parents=True, exist_ok=True)
        suite.write_text("def test_nothing():\n    assert True\n")
        store, unused = self.work / "overhead-store", self.work / "cupy-unused"
        for round_ in range(self.args.overhead_repeat):
            steps = [("plain", None), ("configured", store)]
            for run, at in (steps if round_ % 2 == 0 else steps[::-1]):
                self.pytest("overhead", run, str(suite), unused, at)

    def median(self, row: str, run: str):
        values = [r["seconds"] for r in self.runs
                  if r["row"] == row and r["run"] == run and r["exit"] == 0]
        return (round(statistics.median(values), 3), len(values)) if values else (None, 0)

    def write(self) -> None:
        suites: dict = {}
        for row in sorted({r["row"] for r in self.runs} - {"overhead"}):
            record: dict = {}
            for run in ("cold", "warm", "edit"):
                value, count = self.median(row, run)
                if value is not None:
                    record[f"{run}_s"], record[f"{run}_n"] = value, count
            if record.get("cold_s") and record.get("warm_s"):
                record["ratio"] = round(record["cold_s"] / record["warm_s"], 2)
            if record.get("cold_s") and record.get("edit_s"):
                record["edit_ratio"] = round(record["cold_s"] / record["edit_s"], 2)
            suites[row] = record
        goals = {}
        x = f"-x{self.args.xdist}"
        for name, top, bottom, least in GOALS:
            values = []
            for ref in (top, bottom):
                row, field = ref.format(x=x).split(".")
                values.append(suites.get(row, {}).get(field))
            if all(values):
                ratio = values[0] / values[1]
                goals[name.replace("-nN", f"-n {self.args.xdist}")] = {
                    "ratio": round(ratio, 2), "at_least": least,
                    "status": "pass" if ratio >= least else "fail"}
        plain, _ = self.median("overhead", "plain")
        configured, count = self.median("overhead", "configured")
        if plain is not None and configured is not None:
            ms = (configured - plain) * 1000
            goals["plugin overhead (configured, no kernels) <= 30 ms"] = {
                "ms": round(ms, 1), "plain_s": plain, "configured_s": configured, "n": count,
                "status": "pass" if ms <= 30 else "fail"}
        Path(self.args.out).write_text(json.dumps(
            {"schema": 1, "suites": suites, "goals": goals, "runs": self.runs}, indent=2))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--suite", default=str(ROOT / "tests/python/gpu/test_cupy_mdspan.py"))
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--xdist", type=int, default=8)
    parser.add_argument("--parts", default="alone,xdist,overhead")
    parser.add_argument("--overhead-repeat", type=int, default=7)
    parser.add_argument("--warm-repeat", type=int, default=5)
    parser.add_argument("--deadline", type=float, default=float("inf"),
                        help="start no run after this many seconds")
    args = parser.parse_args()
    bench = Bench(args)
    parts = set(args.parts.split(","))
    if "overhead" in parts:
        bench.overhead()
    if "alone" in parts:
        bench.rounds("", ())
    if "warm" in parts:
        bench.warm_pairs()
    if "xdist" in parts and args.xdist:
        bench.rounds(f"-x{args.xdist}", ("-n", str(args.xdist)))
    bench.write()
    print(json.dumps(json.loads(Path(args.out).read_text())["goals"], indent=2), file=sys.stderr)
    return 1 if any(r["exit"] for r in bench.runs) else 0


if __name__ == "__main__":
    sys.exit(main())
