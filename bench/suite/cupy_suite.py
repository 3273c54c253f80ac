#!/usr/bin/python3
"""CuPy test files with CuPy's own kernel cache and compiled through cubby (the pytest plugin's
CuPy adapter), in fresh pytest processes, configurations alternating every round. The suite is one
or more files or folders (--suite, repeatable; default tests/python/gpu/test_cupy_mdspan.py: 25
RawModules of mdspan kernels, 100 tests); CuPy's own test files (bench/suite/cupy_files.txt,
extracted by bench/suite/cupy_tests.sh) make the real-suite run (ci/gpu/cupy-real.sh). Runs:

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
  alone-warm (--parts xdist,alone-warm) --warm-repeat warm runs each way alone, alternating, on
           the folder and store the first -nN round filled (no cold alone run: CuPy's own takes
           minutes there); with --warm-control a third row, cupy-cubby-control, runs cubby again
           (the three rotate): the spread between identical runs, the noise to read the rest by
  keys     (--parts keys) one more warm cubby run of the --key-file tests alone on a warm store,
           with bench/tools/cupy_timer_plugin.py: the time its Cache.key calls took (cubby's key
           derivation for every program the file compiles, in a warm process)

  cupy_suite.py --out cupy_suite.json --work DIR [--suite PATH]... [--repeat 2] [--xdist 8]
                [--parts alone,xdist,alone-warm,overhead,warm,keys] [--runs cold,warm,edit]
                [--warm-extra N] [--overhead-repeat 7] [--warm-repeat 5] [--warm-control]
                [--key-file NAME] [--deadline SECONDS]

--parts run in the order given. --warm-extra N: after each round, N more alternating warm runs
each way on that round's folder and store (warm medians without another cold fill).

Every run records its wall seconds, its CPU seconds (user + system of the session and every
process it waited for: xdist workers, the prefetch; a second figure, less moved by a noisy
machine's stalls than the wall time), the CPU seconds of the session's main thread alone
(main_thread_cpu_s, from the probe: the rows' <run>_main_cpu_s, the goals' main_cpu_ratio; the
CPU seconds beyond it are other threads' and processes'; process_cpu_s: the session process's
threads, <run>_process_cpu_s; what it lacks of cpu_s is child processes'), whether the plugin
started a prefetch and what its read-ahead found (<run>_prefetch_started: how many runs started
one), exit status, the tests' outcomes, the
tests that failed by --cubby-require-warm, and (through bench/suite/suite_probe.py) the cubby
plugin's counters for the session: compiles, hits, CuPy's programs through cubby and CuPy's own
way, and every counter whose name says a program was compiled without the store ("without",
"uncached", "fallback", "no_store"); CuPy's own runs record how many kernels CuPy's cache folder
holds after them.

Writes whole_suite.py's schema 1 (bench/tools/bench_report.py --suite reads it: rows cupy-own,
cupy-cubby, cupy-own-xN, cupy-cubby-xN; medians of the rounds: runs whose pytest finished, failed
tests or not), plus "goals" (a verdict each: pass, fail, or n/a when not measured; a ratio of
medians from 5 runs a side on carries interval_90, its 90% bootstrap interval: on a shared machine
the medians of identical runs can differ by 10%, so a verdict near 1 is read against it and
against the A/A row of --warm-control; speed_ratio and speed_interval_90: the same ratio of each
run's seconds over its speed_calib_s, the probe's measure of the machine's speed at the session's
end, which takes out some of that noise; paired_ratio, paired_interval_90 and paired_n: the median
of the ratios of the rounds in which both rows ran, each pair minutes apart at most, so the
machine's slow drift cancels within a pair; the verdict stays the plain medians') and "runs",
and the verdict table as text beside it (OUT with .txt). The files are rewritten after every run.
Python runs from compiled bytecode, as `pip install` leaves it: PYTHONDONTWRITEBYTECODE (set on
some CI images) is taken out of the sessions' environment, so the plugin's modules and the test
files pytest rewrites are compiled once, both ways, not in every session.
--deadline is a hard end: no run starts with less than 5 s left, and a run still going then is
stopped (recorded, exit "deadline", left out of the medians), so a time-bounded call keeps what
was measured. Needs CuPy, a GPU and the cubby package (PYTHONPATH) with libcubby.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import random
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
GOALS = (  # (name, numerator row.field, denominator row.field, at least)
    ("cold alone: CuPy's own / cubby >= 1.5", "cupy-own.cold_s", "cupy-cubby.cold_s", 1.5),
    ("after a header edit: CuPy's own cold / cubby edit >= 6", "cupy-own.cold_s",
     "cupy-cubby.edit_s", 6.0),
    ("cold -nN: CuPy's own / cubby >= 1.3", "cupy-own{x}.cold_s", "cupy-cubby{x}.cold_s", 1.3),
    ("warm alone: CuPy's own / cubby >= 1", "cupy-own.warm_s", "cupy-cubby.warm_s", 1.0),
    ("warm -nN: CuPy's own / cubby >= 1", "cupy-own{x}.warm_s", "cupy-cubby{x}.warm_s", 1.0),
)
# A counter whose name says so counts programs compiled without the store (libcubby's and the
# plugin's names are read from the session's JSON, never listed here).
WITHOUT = re.compile(r"without|uncached|fallback|no_store")
KEY_GOAL_MS = 50.0
MIN_START_S = 5.0  # no run starts with less time left than this
RESAMPLES = 2000  # the bootstrap's, for a ratio's 90% interval (a fixed seed: one answer per data)
CONTROL = "cupy-cubby-control"  # --warm-control's row: cubby again, the A/A measure of the noise
FINISHED = (0, 1)  # pytest's exit statuses of a session that ran to its end (1: tests failed)


def finished(run: dict) -> bool:
    """Whether the run's pytest session ran its tests to the end (some may have failed): its exit
    status says so and the probe wrote its outcomes (a session that could not start writes none)."""
    return run["exit"] in FINISHED and run.get("tests") is not None


def cpu_seconds() -> float:
    """User + system seconds of this process's children that have been waited for (and of
    theirs): a run's figure is the difference around it (runs are one at a time)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def without_store(counters: dict) -> int:
    """Programs a session compiled without the store: every counter named so, plus CuPy's
    programs that went CuPy's own way (cupy_own:<reason>)."""
    return int(sum(value for name, value in counters.items()
                   if WITHOUT.search(name) or name.startswith("cupy_own:")))


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work = Path(args.work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.end = time.monotonic() + args.deadline
        self.runs: list = []
        self.warm_stores: list = []  # cubby stores whose warm run finished
        self.run_count = 0
        self.round = 0  # the round of alternating runs under way: runs of one round are pairs

    def time_left(self) -> bool:
        return self.end - time.monotonic() >= MIN_START_S

    def pytest(self, row: str, run: str, suite: list, cupy_dir: Path, store: Path | None,
               *extra: str, env_extra: dict | None = None) -> dict | None:
        """One fresh pytest process; `store` None: CuPy's own cache, without the cubby plugin.
        None when no time is left to start it."""
        if not self.time_left():
            return None
        self.run_count += 1
        probe = self.work / f"probe-{self.run_count}.json"
        probe.unlink(missing_ok=True)
        paths = [str(HERE), os.environ.get("PYTHONPATH", "")]
        env = dict(os.environ, CUPY_CACHE_DIR=str(cupy_dir), CUBBY_SUITE_PROBE=str(probe),
                   **(env_extra or {}))
        env["PYTHONPATH"] = os.pathsep.join(
            [p for p in [*(env_extra or {}).get("PYTHONPATH", "").split(os.pathsep), *paths] if p])
        env.pop("CUBBY_DIR", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        plugin = (["-p", "no:cubby"] if store is None
                  else ["-p", "cubby.plugin", f"--cubby-dir={store}"])
        command = [sys.executable, "-m", "pytest", *suite, "-q", "-p", "no:cacheprovider",
                   "-p", "no:random_order",  # it needs the cache provider
                   "-p", "suite_probe", *plugin, *extra]
        start, used = time.perf_counter(), cpu_seconds()
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            left = self.end - time.monotonic()
            stdout, stderr = process.communicate(
                timeout=None if left == float("inf") else max(left, 1.0))
            status = process.returncode
        except subprocess.TimeoutExpired:  # the deadline: the session and its xdist workers
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            status = "deadline"
        seconds = time.perf_counter() - start
        record = {"row": row, "run": run, "round": self.round, "seconds": round(seconds, 3),
                  "cpu_s": round(cpu_seconds() - used, 3), "exit": status}
        try:
            found = json.loads(probe.read_text())
        except (OSError, ValueError):
            found = {}
        counters = {name: value for name, value in sorted(found.get("counters", {}).items())
                    if value and not isinstance(value, bool)}
        if store is not None:
            record.update(counters=counters, without_store=without_store(counters),
                          without_counted=any(WITHOUT.search(name)
                                              for name in found.get("counters", {})))
        else:
            record["cupy_cache_files"] = sum(1 for p in cupy_dir.rglob("*") if p.is_file())
        for field in ("main_thread_cpu_s", "process_cpu_s", "speed_calib_s", "nvrtc_libraries",
                      "prefetch_started", "read_ahead"):
            if field in found:
                record[field] = found[field]
        record.update(tests=found.get("tests"), require_warm=found.get("require_warm"),
                      failed_tests=found.get("failed_tests", []))
        text = stdout + stderr
        # The first reasons given for programs compiled without the store (said once per process).
        reasons = []
        for line in text.splitlines():
            if re.search(r"without the (store|cache)", line) and line.strip() not in reasons:
                reasons.append(line.strip()[:400])
        if reasons:
            record["without_store_reasons"] = reasons[:3]
        record["summary"] = [line for line in stdout.splitlines()
                             if line.startswith(("hits:", "compiles:", "cupy:", "prefetch:",
                                                 "duplicate", "store:"))
                             or " passed" in line or " failed" in line]
        if status != 0:
            record["output"] = text[-3000:]
        self.runs.append(record)
        tests = record["tests"] or {}
        print(f"[cupy suite] {row} {run}: {seconds:.2f} s (exit {status}; "
              f"{tests.get('passed', '?')} passed, {tests.get('failed', '?')} failed"
              + (f"; compiles {int(counters.get('compiles', 0))}, without the store "
                 f"{record['without_store']}" if store is not None else "") + ")",
              file=sys.stderr, flush=True)
        if store is not None and run == "warm" and finished(record):
            self.warm_stores.append(store)
        self.write()
        return record

    def rounds(self, suffix: str, extra: tuple) -> None:
        runs = self.args.runs.split(",")
        for round_ in range(self.args.repeat):
            if not self.time_left():
                return
            self.round += 1
            own_dir = self.work / f"own{suffix}-{round_}"
            store = self.work / f"store{suffix}-{round_}"
            unused = self.work / f"cupy-unused{suffix}-{round_}"
            for path in (own_dir, store, unused):
                shutil.rmtree(path, ignore_errors=True)
            own = [(run, own_dir, None, ()) for run in ("cold", "warm") if run in runs]
            ours = [(run, unused, store, ("--cubby-require-warm",) if run == "warm" else ())
                    for run in ("cold", "warm", "edit") if run in runs]
            pairs = [(f"cupy-own{suffix}", own), (f"cupy-cubby{suffix}", ours)]
            # Run kind by run kind (both cold runs first), so a deadline cuts warm runs, not the
            # second cold one; the rows' order swaps every round.
            for kind in ("cold", "warm", "edit"):
                for row, steps in (pairs if round_ % 2 == 0 else pairs[::-1]):
                    for run, cupy_dir, at, more in steps:
                        if run != kind:
                            continue
                        if run == "edit":
                            shutil.rmtree(store / "entries", ignore_errors=True)
                        self.pytest(row, run, self.args.suite, cupy_dir, at, *extra, *more)
            warm = [(f"cupy-own{suffix}", own_dir, None, ()),
                    (f"cupy-cubby{suffix}", unused, store, ("--cubby-require-warm",))]
            if "edit" in runs:  # the store's entries are gone: nothing warm to time
                continue
            for extra_round in range(self.args.warm_extra):
                self.round += 1
                order = warm if (round_ + extra_round) % 2 else warm[::-1]
                for row, cupy_dir, at, more in order:
                    self.pytest(row, "warm", self.args.suite, cupy_dir, at, *extra, *more)

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
            self.round += 1
            for row, cupy_dir, at, more in (steps if round_ % 2 == 0 else steps[::-1]):
                self.pytest(row, "warm", self.args.suite, cupy_dir, at, *more)

    def alone_on_xdist_stores(self) -> None:
        """Warm runs alone on the folder and store of the first -nN round (rows cupy-own and
        cupy-cubby, run warm): the warm-alone figures without a cold alone fill."""
        suffix = f"-x{self.args.xdist}"
        own_dir, store = self.work / f"own{suffix}-0", self.work / f"store{suffix}-0"
        if not (own_dir.is_dir() and store.is_dir()):
            self.runs.append({"row": "cupy-cubby", "run": "warm", "exit": "skipped",
                              "note": "no -nN round filled a folder and a store: run xdist first"})
            self.write()
            return
        steps = [("cupy-own", own_dir, None, ()),
                 ("cupy-cubby", self.work / "cupy-unused-alone", store, ("--cubby-require-warm",))]
        if self.args.warm_control:
            steps.append((CONTROL, self.work / "cupy-unused-control", store,
                          ("--cubby-require-warm",)))
        for round_ in range(self.args.warm_repeat):
            if not self.time_left():
                return
            # The rows rotate (two alternate): each runs first, second (and last) in turn.
            self.round += 1
            turn = round_ % len(steps)
            for row, cupy_dir, at, more in steps[turn:] + steps[:turn]:
                self.pytest(row, "warm", self.args.suite, cupy_dir, at, *more)

    def overhead(self) -> None:
        suite = self.work / "overhead" / "test_nothing.py"
        suite.parent.mkdir(parents=True, exist_ok=True)
        suite.write_text("def test_nothing():\n    assert True\n")
        store, unused = self.work / "overhead-store", self.work / "cupy-unused"
        for round_ in range(self.args.overhead_repeat):
            steps = [("plain", None), ("configured", store)]
            for run, at in (steps if round_ % 2 == 0 else steps[::-1]):
                self.pytest("overhead", run, [str(suite)], unused, at)

    def key_files(self) -> list:
        """The --key-file tests: that path, else the suite's paths that contain the name."""
        wanted = self.args.key_file
        if Path(wanted).exists():
            return [wanted]
        return [path for path in self.args.suite if wanted in path]

    def keys(self) -> None:
        """Cubby's key derivation in a warm process: one more warm run of the --key-file tests
        on a warm store, each Cache.compile preceded by a timed Cache.key of the same request
        (bench/tools/cupy_timer_plugin.py)."""
        files = self.key_files()
        if not self.warm_stores or not files:
            note = ("no warm store: run alone or xdist rounds with warm runs first"
                    if files else f"no suite path contains {self.args.key_file!r}")
            self.runs.append({"row": "keys", "run": "warm", "exit": "skipped", "note": note})
            self.write()
            return
        timer = self.work / "keys-timer.json"
        timer.unlink(missing_ok=True)
        record = self.pytest("keys", "warm", files, self.work / "cupy-unused-keys",
                             self.warm_stores[0], "--cubby-require-warm", "-p", "cupy_timer_plugin",
                             env_extra={"CUPY_TIMER_OUT": str(timer),
                                        "PYTHONPATH": str(ROOT / "bench" / "tools")})
        if record is None:
            return
        try:
            calls = json.loads(timer.read_text())["calls"]
        except (OSError, ValueError, KeyError):
            record["note"] = "cupy_timer_plugin wrote nothing"
        else:
            key, hit = calls.get("cubby_key", {}), calls.get("cubby_compile", {})
            again = calls.get("cubby_key_again", {})
            record.update(key_count=key.get("count", 0),
                          key_ms=round(key.get("total_s", 0.0) * 1000, 2),
                          key_max_ms=round(key.get("max_s", 0.0) * 1000, 3),
                          key_first_ms=round(key.get("first_s", 0.0) * 1000, 3),
                          key_p50_ms=round(key.get("p50_s", 0.0) * 1000, 3),
                          key_p90_ms=round(key.get("p90_s", 0.0) * 1000, 3),
                          key_again_ms=round(again.get("total_s", 0.0) * 1000, 2),
                          compile_calls=hit.get("count", 0),
                          compile_calls_ms=round(hit.get("total_s", 0.0) * 1000, 2),
                          files=files)
        self.write()

    def runs_of(self, row: str, run: str, only_finished: bool = True) -> list:
        return [r for r in self.runs if r["row"] == row and r["run"] == run
                and (finished(r) or not only_finished)]

    def median(self, row: str, run: str, field: str = "seconds"):
        values = [r[field] for r in self.runs_of(row, run) if field in r]
        return (round(statistics.median(values), 3), len(values)) if values else (None, 0)

    def suites(self) -> dict:
        suites: dict = {}
        for row in sorted({r["row"] for r in self.runs} - {"overhead", "keys"}):
            record: dict = {}
            for run in ("cold", "warm", "edit"):
                value, count = self.median(row, run)
                if value is not None:
                    record[f"{run}_s"], record[f"{run}_n"] = value, count
                    record[f"{run}_cpu_s"] = self.median(row, run, "cpu_s")[0]
                    for field, name in (("main_thread_cpu_s", "main_cpu_s"),
                                        ("process_cpu_s", "process_cpu_s")):
                        value = self.median(row, run, field)[0]
                        if value is not None:
                            record[f"{run}_{name}"] = value
                    started = [r for r in self.runs_of(row, run, only_finished=False)
                               if r.get("prefetch_started")]
                    if started:
                        record[f"{run}_prefetch_started"] = len(started)
            if record.get("cold_s") and record.get("warm_s"):
                record["ratio"] = round(record["cold_s"] / record["warm_s"], 2)
            if record.get("cold_s") and record.get("edit_s"):
                record["edit_ratio"] = round(record["cold_s"] / record["edit_s"], 2)
            suites[row] = record
        return suites

    def samples(self, row: str, run: str, per_speed: bool = False) -> list:
        """The row's finished runs' seconds; `per_speed`: over each run's speed calibration
        (the runs that have one)."""
        runs = self.runs_of(row, run)
        if per_speed:
            return [r["seconds"] / r["speed_calib_s"] for r in runs if r.get("speed_calib_s")]
        return [r["seconds"] for r in runs]

    def paired(self, top: str, bottom: str, run: str) -> list:
        """top's seconds over bottom's, one ratio per round in which both rows' `run` finished
        (the first of each there)."""
        firsts: dict = {}
        for r in self.runs_of(top, run) + self.runs_of(bottom, run):
            firsts.setdefault((r["row"], r.get("round")), r["seconds"])
        return [firsts[(top, n)] / firsts[(bottom, n)] for (row, n) in firsts
                if row == top and n is not None and (bottom, n) in firsts]

    def with_paired(self, goal: dict, top: str, bottom: str, run: str) -> None:
        """The goal's paired_ratio, paired_interval_90 and paired_n, from 5 rounds on."""
        ratios = self.paired(top, bottom, run)
        interval = median_interval(ratios)
        if interval:
            goal.update(paired_ratio=round(statistics.median(ratios), 3),
                        paired_interval_90=interval, paired_n=len(ratios))

    def goals(self, suites: dict) -> dict:
        goals: dict = {}
        x = f"-x{self.args.xdist}"
        for name, top, bottom, least in GOALS:
            refs = [ref.format(x=x).split(".") for ref in (top, bottom)]
            values = [suites.get(row, {}).get(field) for row, field in refs]
            if all(values):
                ratio = values[0] / values[1]
                goal = {"ratio": round(ratio, 2), "own_s": values[0], "cubby_s": values[1],
                        "at_least": least, "status": "pass" if ratio >= least else "fail"}
                cpu = [suites.get(row, {}).get(field.replace("_s", "_cpu_s"))
                       for row, field in refs]
                if all(cpu):  # a second figure, not the verdict: the goal is the wall time
                    goal["cpu_ratio"] = round(cpu[0] / cpu[1], 2)
                main = [suites.get(row, {}).get(field.replace("_s", "_main_cpu_s"))
                        for row, field in refs]
                if all(main):  # the sessions' main threads alone (suite_probe)
                    goal["main_cpu_ratio"] = round(main[0] / main[1], 3)
                run = refs[0][1].removesuffix("_s")
                interval = ratio_interval(self.samples(refs[0][0], run),
                                          self.samples(refs[1][0], run))
                if interval:  # how far the medians' ratio moves with the machine's noise
                    goal["interval_90"] = interval
                tops, bottoms = (self.samples(row, run, per_speed=True) for row, _ in refs)
                speed = ratio_interval(tops, bottoms)
                if speed:  # each run over the machine's speed then: less noise, not the verdict
                    goal["speed_ratio"] = round(statistics.median(tops)
                                                / statistics.median(bottoms), 3)
                    goal["speed_interval_90"] = speed
                self.with_paired(goal, refs[0][0], refs[1][0], run)
                goals[name.replace("-nN", f"-n {self.args.xdist}")] = goal
        ours, again = self.samples("cupy-cubby", "warm"), self.samples(CONTROL, "warm")
        if ours and again:
            control_s, cubby_s = statistics.median(again), statistics.median(ours)
            interval = ratio_interval(again, ours)
            goal = {"ratio": round(control_s / cubby_s, 2), "control_s": round(control_s, 3),
                    "cubby_s": round(cubby_s, 3), "n": min(len(ours), len(again)),
                    **({"interval_90": interval} if interval else {}), "status": "info"}
            self.with_paired(goal, CONTROL, "cupy-cubby", "warm")
            goals["A/A: cubby control / cubby, warm alone (the noise; no goal)"] = goal
        ours = [r for r in self.runs if r["row"].startswith("cupy-cubby") and finished(r)]
        if ours:
            without = sum(r["without_store"] for r in ours)
            warm = [r for r in ours if r["run"] == "warm"]
            warm_compiles = int(sum(r["counters"].get("compiles", 0) for r in warm))
            counted = any(r["without_counted"] for r in ours)
            goals["0 programs compiled without the store"] = {
                "without_store": without, "warm_compiles": warm_compiles, "runs": len(ours),
                **({} if counted else {"note": "libcubby counts no such programs by name: "
                                               "judged by the warm runs' compiles and CuPy's own"}),
                "status": "pass" if without == 0 and warm_compiles == 0 and warm else
                          "fail" if without or warm_compiles else "n/a"}
        warm = [r for r in self.runs if r["row"].startswith("cupy-cubby") and r["run"] == "warm"]
        if warm:
            failures = []
            for r in warm:
                own = [o for o in self.runs if o["row"] == r["row"].replace("cubby", "own")
                       and o["run"] == "warm" and finished(o)]
                allowed = min((o["tests"]["failed"] + o["tests"]["errors"] for o in own), default=0)
                tests = r.get("tests") or {}
                failed = tests.get("failed", 0) + tests.get("errors", 0)
                if not finished(r) or r.get("require_warm") or failed > allowed:
                    failures.append(f"{r['row']}: exit {r['exit']}, {r.get('require_warm')} "
                                    f"require-warm failures, {failed} failed (CuPy's own: "
                                    f"{allowed})")
            goals["--cubby-require-warm passes on the second run"] = {
                "runs": len(warm), "failures": failures,
                "status": "fail" if failures else "pass"}
        keys = [r for r in self.runs if r["row"] == "keys" and "key_ms" in r]
        if keys:
            r = keys[-1]
            goals[f"key derivation in a warm process <= {KEY_GOAL_MS:.0f} ms"] = {
                "ms": r["key_ms"], "programs": r["key_count"], "max_ms": r["key_max_ms"],
                "first_ms": r.get("key_first_ms"), "p50_ms": r.get("key_p50_ms"),
                "p90_ms": r.get("key_p90_ms"), "again_ms": r.get("key_again_ms"),
                "hit_path_ms": r["compile_calls_ms"], "files": r["files"],
                "status": "pass" if r["key_ms"] <= KEY_GOAL_MS else "fail"}
        plain, _ = self.median("overhead", "plain")
        configured, count = self.median("overhead", "configured")
        if plain is not None and configured is not None:
            ms = (configured - plain) * 1000
            goals["plugin overhead (configured, no kernels) <= 30 ms"] = {
                "ms": round(ms, 1), "plain_s": plain, "configured_s": configured, "n": count,
                "status": "pass" if ms <= 30 else "fail"}
        return goals

    def write(self) -> None:
        suites = self.suites()
        goals = self.goals(suites)
        stopped = [r["row"] + " " + r["run"] for r in self.runs if r["exit"] == "deadline"]
        Path(self.args.out).write_text(json.dumps(
            {"schema": 1, "suite_paths": self.args.suite, "suites": suites, "goals": goals,
             "stopped_at_deadline": stopped, "runs": self.runs}, indent=2))
        Path(self.args.out).with_suffix(".txt").write_text(verdict_table(suites, goals, stopped))


def ratio_interval(tops: list, bottoms: list) -> list | None:
    """The 90% bootstrap interval of median(tops) / median(bottoms): resampled with a fixed
    seed, so the same runs give the same interval; None under 5 runs a side."""
    if min(len(tops), len(bottoms)) < 5:
        return None
    return list(_interval(tuple(tops), tuple(bottoms)))


def median_interval(values: list) -> list | None:
    """The 90% bootstrap interval of median(values), resampled as ratio_interval does; None
    under 5 values."""
    if len(values) < 5:
        return None
    return list(_interval(tuple(values), None))


@functools.lru_cache(maxsize=64)
def _interval(tops: tuple, bottoms: tuple | None) -> tuple:
    """ratio_interval's work (tens of ms at 60 runs a side), kept per set of runs: the files are
    rewritten after every run, and a run changes one row's intervals only. Without bottoms:
    median_interval's."""
    draw = random.Random(0)
    ratios = sorted(statistics.median(draw.choices(tops, k=len(tops)))
                    / (statistics.median(draw.choices(bottoms, k=len(bottoms))) if bottoms else 1)
                    for _ in range(RESAMPLES))
    return round(ratios[int(0.05 * RESAMPLES)], 3), round(ratios[int(0.95 * RESAMPLES) - 1], 3)


def verdict_table(suites: dict, goals: dict, stopped: list) -> str:
    lines = ["| row | cold s (n) | warm s (n) | edit s (n) |", "| --- | ---: | ---: | ---: |"]
    for row, record in suites.items():
        cells = [f"{record[f'{run}_s']:.2f} ({record[f'{run}_n']})" if f"{run}_s" in record
                 else "-" for run in ("cold", "warm", "edit")]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    lines += ["", "| goal | figure | verdict |", "| --- | --- | --- |"]
    for name, goal in goals.items():
        figure = ", ".join(f"{k} {v}" for k, v in goal.items() if k != "status")
        lines.append(f"| {name} | {figure} | {goal['status']} |")
    if stopped:
        lines += ["", "stopped at the deadline: " + ", ".join(stopped)]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--suite", action="append",
                        help="a test file or folder (repeatable): one pytest session runs them all")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--xdist", type=int, default=8)
    parser.add_argument("--parts", default="alone,xdist,overhead")
    parser.add_argument("--runs", default="cold,warm,edit",
                        help="the runs of each round (alone, xdist)")
    parser.add_argument("--warm-extra", type=int, default=0)
    parser.add_argument("--overhead-repeat", type=int, default=7)
    parser.add_argument("--warm-repeat", type=int, default=5)
    parser.add_argument("--warm-control", action="store_true",
                        help=f"alone-warm: a third row, {CONTROL}, runs cubby again (A/A: the "
                             "spread between identical runs, against which to read the others)")
    parser.add_argument("--key-file", default="test_mdspan",
                        help="the keys part's tests: a path, or a name the suite's paths contain")
    parser.add_argument("--deadline", type=float, default=float("inf"),
                        help="seconds: no run starts after, a run still going is stopped")
    args = parser.parse_args()
    args.suite = args.suite or [str(ROOT / "tests/python/gpu/test_cupy_mdspan.py")]
    bench = Bench(args)
    for part in args.parts.split(","):
        if part == "overhead":
            bench.overhead()
        elif part == "alone":
            bench.rounds("", ())
        elif part == "warm":
            bench.warm_pairs()
        elif part == "xdist" and args.xdist:
            bench.rounds(f"-x{args.xdist}", ("-n", str(args.xdist)))
        elif part == "alone-warm":
            bench.alone_on_xdist_stores()
        elif part == "keys":
            bench.keys()
        elif part != "xdist":
            parser.error(f"unknown part {part!r}: alone, xdist, alone-warm, overhead, warm, keys")
    bench.write()
    print(Path(args.out).with_suffix(".txt").read_text(), file=sys.stderr)
    return 1 if any(r["exit"] not in (0, "skipped") for r in bench.runs) else 0


if __name__ == "__main__":
    sys.exit(main())
