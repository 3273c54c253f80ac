"""Times a CuPy test file (tests/python/gpu/test_cupy_mdspan.py) with CuPy's own kernel cache and
with the cubby adapter, cold and warm, alone and under pytest-xdist, plus a fleet run (a fresh
store served by Redis), an export/import "fresh machine" run, and the plugin's own overhead on a
session with no kernels. Called by ci/gpu/pytest.sh (see there); writes timings.json,
timings.txt and runs/*.log.

Every figure is the median of fresh pytest processes whose configurations alternate (the order
swaps every round), so a drift of the machine reaches all of them alike:
  cupy-cold / cubby-cold     empty CuPy cache folder / empty store, every round a new one
  cupy-warm / cubby-warm     the last cold round's folder / store (cubby's with require-warm)
  ...-x<N>                   the same with `-n N` (pytest-xdist)
  fleet                      a new empty store with CUBBY_REMOTE: served by Redis (require-warm)
  fresh-machine              a store filled only by `cubby import` of `cubby export`'s archive
  overhead: plain / configured / unconfigured   a one-test file without the cubby plugin, with
                             it configured (--cubby-dir), with it loaded but not configured
CuPy's own runs do not load the cubby plugin at all (-p no:cubby)."""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOALS = (  # (name, numerator, denominator, at most)
    ("cubby-warm <= cupy-warm (alone)", "cubby-warm", "cupy-warm", 1.0),
    ("cubby-cold <= cupy-cold (alone)", "cubby-cold", "cupy-cold", 1.0),
)

# pytest's exit status when it collected nothing (or deselected everything).
PYTEST_NO_TESTS = 5


class Runner:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out, self.work = Path(args.out), Path(args.work)
        (self.out / "runs").mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        self.runs: list = []
        self.failed = False

    def run(self, name: str, cupy_dir: Path, store: Path | None, *extra: str,
            env_extra: dict | None = None, suite: str | None = None) -> float:
        """One fresh pytest process; `store` None: CuPy's own cache, no cubby plugin."""
        env = dict(os.environ, CUPY_CACHE_DIR=str(cupy_dir), **(env_extra or {}))
        plugin = ["-p", "no:cubby"] if store is None else ["-p", "cubby.plugin",
                                                           f"--cubby-dir={store}"]
        command = [sys.executable, "-m", "pytest", suite or self.args.suite, "-q",
                   "-p", "no:cacheprovider", *plugin, *extra]
        start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        index = len([r for r in self.runs if r["name"] == name])
        (self.out / "runs" / f"{name}-{index}.log").write_text(
            " ".join(command) + "\n" + done.stdout + done.stderr)
        passed = re.search(r"(\d+) passed", done.stdout)
        inside = re.search(r" in ([\d.]+)s", done.stdout)
        self.runs.append({
            "name": name, "seconds": round(seconds, 3), "cpu_s": round(cpu, 3),
            "exit": done.returncode,
            "passed": int(passed.group(1)) if passed else 0,
            "pytest_s": float(inside.group(1)) if inside else None,
            "cubby": [line for line in done.stdout.splitlines()
                      if line.startswith(("hits:", "cupy:", "store:", "duplicate", "remote:"))]})
        print(f"  {name}: {seconds:.2f} s (exit {done.returncode})", file=sys.stderr, flush=True)
        if done.returncode == PYTEST_NO_TESTS:
            # Nothing collected: no figure (seconds() keeps exit 0 only), and not a failure.
            print(f"  {name}: pytest collected no tests (exit 5); left out of the figures",
                  file=sys.stderr, flush=True)
        elif done.returncode != 0:
            self.failed = True
        return seconds

    def seconds(self, name: str, field: str = "seconds") -> list:
        return [r[field] for r in self.runs if r["name"] == name and r["exit"] == 0]

    def last(self, name: str) -> dict:
        return [r for r in self.runs if r["name"] == name][-1]


def cold_and_warm(runner: Runner, suffix: str, extra: tuple) -> Path:
    """Alternating cold rounds, then alternating warm rounds; returns the warm cubby store."""
    work = runner.work
    store = work / "none"
    for round_ in range(runner.args.cold_repeat):
        cupy_dir, store = work / f"cupy{suffix}-{round_}", work / f"store{suffix}-{round_}"
        pair = [lambda: runner.run(f"cupy-cold{suffix}", cupy_dir, None, *extra),
                lambda: runner.run(f"cubby-cold{suffix}", work / "cupy-unused", store, *extra)]
        for step in (pair if round_ % 2 == 0 else pair[::-1]):
            step()
    for round_ in range(runner.args.warm_repeat):
        pair = [lambda: runner.run(f"cupy-warm{suffix}", cupy_dir, None, *extra),
                lambda: runner.run(f"cubby-warm{suffix}", work / "cupy-unused", store, *extra,
                                   "--cubby-require-warm")]
        for step in (pair if round_ % 2 == 0 else pair[::-1]):
            step()
    return store


def fleet(runner: Runner, remote: str) -> None:
    """Runner A fills the remote (a cold run under -n N); runner B's first runs on new stores."""
    env = {"CUBBY_REMOTE": remote}
    xdist = ("-n", str(runner.args.xdist)) if runner.args.xdist else ()
    runner.run("fleet-fill", runner.work / "cupy-unused", runner.work / "fleet-a", *xdist,
               env_extra=env)
    for round_ in range(runner.args.warm_repeat):
        runner.run("fleet", runner.work / f"cupy-fleet-{round_}", runner.work / f"fleet-b{round_}",
                   "--cubby-require-warm", env_extra=env)


def fresh_machine(runner: Runner, store: Path) -> str:
    """`cubby export` of the warm store, `cubby import` into an empty one, then warm runs."""
    cli, work = runner.args.cli, runner.work
    archive, fresh = work / "store.tar", work / "fresh-store"
    for step in ([cli, "export", "--dir", str(store), str(archive)],
                 [cli, "import", "--dir", str(fresh), str(archive)]):
        done = subprocess.run(step, capture_output=True, text=True)
        (runner.out / "runs" / f"{step[1]}.log").write_text(" ".join(step) + "\n" + done.stdout +
                                                            done.stderr)
        if done.returncode != 0:
            runner.failed = True
            return f"`{step[1]}` failed (runs/{step[1]}.log)"
    for round_ in range(min(runner.args.warm_repeat, 3)):
        runner.run("fresh-machine", work / f"cupy-fresh-{round_}", fresh, "--cubby-require-warm")
    return ""


def overhead(runner: Runner, store: Path) -> None:
    """The plugin's cost on a session with no kernels: one trivial test, three ways."""
    suite = runner.work / "overhead" / "test_nothing.py"
    suite.parent.mkdir(parents=True, exist_ok=True)
    suite.write_text("def test_nothing():\n    assert True\n")
    unused = runner.work / "cupy-unused"
    for round_ in range(runner.args.overhead_repeat):
        steps = [lambda: runner.run("overhead-plain", unused, None, suite=str(suite)),
                 lambda: runner.run("overhead-configured", unused, store, suite=str(suite)),
                 lambda: runner.run("overhead-unconfigured", unused, None, "-p", "cubby.plugin",
                                    suite=str(suite))]
        for step in steps[round_ % 3:] + steps[:round_ % 3]:
            step()


def summarize(runner: Runner, fresh_note: str) -> dict:
    names = sorted({r["name"] for r in runner.runs})
    table = {}
    for name in names:
        values = runner.seconds(name)
        if values:
            table[name] = {"median": round(statistics.median(values), 3), "min": min(values),
                           "max": max(values), "n": len(values)}
    median = {name: row["median"] for name, row in table.items()}
    goals = {}
    x = f"-x{runner.args.xdist}"
    goal_list = list(GOALS) + [
        (f"cubby-warm{x} <= cupy-warm{x}", f"cubby-warm{x}", f"cupy-warm{x}", 1.0),
        (f"cubby-cold{x} <= 0.85 x cupy-cold{x}", f"cubby-cold{x}", f"cupy-cold{x}", 0.85),
        ("fleet <= 1.5 x cubby-warm", "fleet", "cubby-warm", 1.5),
        ("fleet >= 10x faster than cubby-cold", "fleet", "cubby-cold", 0.1)]
    for goal, top, bottom, limit in goal_list:
        if median.get(top) and median.get(bottom):
            ratio = median[top] / median[bottom]
            goals[goal] = {"ratio": round(ratio, 3), "limit": limit,
                           "status": "pass" if ratio <= limit else "fail"}
    # The plugin's overhead in wall time and in CPU time (user + system of the pytest process and
    # its children: less sensitive to the scheduling noise of a shared host than wall time).
    for field, unit in (("seconds", "wall"), ("cpu_s", "CPU")):
        plain = runner.seconds("overhead-plain", field)
        for variant in ("configured", "unconfigured"):
            mine = runner.seconds(f"overhead-{variant}", field)
            if plain and mine:
                ms = (statistics.median(mine) - statistics.median(plain)) * 1000
                goals[f"plugin overhead ({variant}, {unit}) <= 30 ms"] = {
                    "ms": round(ms, 1), "limit": 30, "status": "pass" if ms <= 30 else "fail"}
    return {"table": table, "goals": goals, "fresh_note": fresh_note}


def write(runner: Runner, result: dict) -> None:
    lines = ["CuPy mdspan test file; wall seconds per pytest process (median [min..max] of n)"]
    for name, row in result["table"].items():
        lines.append(f"  {name:<26} {row['median']:8.2f}  [{row['min']:.2f}..{row['max']:.2f}] "
                     f"n={row['n']}")
    for name in sorted({r["name"] for r in runner.runs if r["cubby"]}):
        lines.append(f"  {name}: " + " | ".join(runner.last(name)["cubby"]))
    for goal, row in result["goals"].items():
        figure = f"{row['ms']} ms" if "ms" in row else f"ratio {row['ratio']}"
        lines.append(f"goal {goal}: {figure} -> {row['status']}")
    if result["fresh_note"]:
        lines.append(f"fresh-machine: {result['fresh_note']}")
    (runner.out / "timings.txt").write_text("\n".join(lines) + "\n")
    (runner.out / "timings.json").write_text(json.dumps({**result, "runs": runner.runs}, indent=2))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--suite", required=True)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--cold-repeat", type=int, default=3)
    parser.add_argument("--warm-repeat", type=int, default=5)
    parser.add_argument("--xdist", type=int, default=8, help="workers of the -n runs (0: none)")
    parser.add_argument("--remote", default="", help="redis://... for the fleet runs")
    parser.add_argument("--overhead-repeat", type=int, default=15)
    parser.add_argument("--parts", default="alone,xdist,fleet,fresh,overhead",
                        help="which parts to run (comma-separated)")
    args = parser.parse_args()
    runner = Runner(args)
    parts = set(args.parts.split(","))
    store = None
    fresh_note = ""
    # Each part's results are written as soon as it ends (a time limit keeps what was measured).
    if "xdist" in parts and args.xdist:
        store = cold_and_warm(runner, f"-x{args.xdist}", ("-n", str(args.xdist)))
        write(runner, summarize(runner, fresh_note))
    if "alone" in parts:
        store = cold_and_warm(runner, "", ())
        write(runner, summarize(runner, fresh_note))
    if "fleet" in parts and args.remote:
        fleet(runner, args.remote)
        write(runner, summarize(runner, fresh_note))
    fresh_note = fresh_machine(runner, store) if "fresh" in parts and store else ""
    if "overhead" in parts:
        overhead(runner, store or runner.work / "overhead-store")
    write(runner, summarize(runner, fresh_note))
    print((runner.out / "timings.txt").read_text(), file=sys.stderr)
    return 1 if runner.failed else 0


if __name__ == "__main__":
    sys.exit(main())
