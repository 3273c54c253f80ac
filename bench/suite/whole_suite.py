#!/usr/bin/python3
"""Whole-suite benchmark: runs each test suite as a whole process twice on one store — first on an
empty store (cold), then again (warm) — and reports "1st run (cold) / 2nd run (warm)" with the ratio.

  whole_suite.py --suite NAME=COMMAND [--suite ...] [--skip NAME=REASON ...] --out suite.json
                 [--store DIR]

COMMAND is run with `bash -c` and CUBBY_DIR set to a fresh store (a temporary folder, or
DIR/NAME when --store is given; an existing DIR/NAME is emptied first). A run that exits
non-zero is reported with its exit status and the last lines of its output, and the suite gets
no ratio; the other suites still run. Writes {"schema": 1, "suites": {NAME: {cold_s, warm_s,
ratio, cold_exit, warm_exit} or {skipped: REASON}}}.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def say(message: str) -> None:
    print(f"[whole suite] {message}", file=sys.stderr, flush=True)


def run_once(name: str, label: str, command: str, store: Path, log: Path) -> tuple[float, int]:
    """Runs `command` with CUBBY_DIR=store; shows elapsed time every 10 s while it runs."""
    env = dict(os.environ, CUBBY_DIR=str(store))
    start = time.monotonic()
    done = threading.Event()

    def progress() -> None:
        while not done.wait(10):
            say(f"{name}: {label} still running ({time.monotonic() - start:.0f} s)")

    ticker = threading.Thread(target=progress, daemon=True)
    ticker.start()
    with log.open("w") as out:
        status = subprocess.run(["bash", "-c", command], env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    done.set()
    seconds = time.monotonic() - start
    say(f"{name}: {label} took {seconds:.2f} s (exit {status})")
    if status != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        say(f"{name}: {label} failed (exit {status}); last lines of {log}:\n  " + "\n  ".join(tail))
    return seconds, status


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", action="append", default=[], help="NAME=COMMAND")
    parser.add_argument("--skip", action="append", default=[], help="NAME=REASON (reported as skipped)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--store", type=Path, help="parent folder of the stores (default: temporary)")
    args = parser.parse_args(argv)

    suites: dict[str, dict] = {}
    for item in args.skip:
        name, _, reason = item.partition("=")
        suites[name] = {"skipped": reason or "skipped"}
        say(f"{name}: skipped: {reason}")
    temp = None if args.store else Path(tempfile.mkdtemp(prefix="cubby-suite-"))
    try:
        for item in args.suite:
            name, sep, command = item.partition("=")
            if not sep or not name or not command.strip():
                say(f"ignoring --suite '{item}': expected NAME=COMMAND")
                continue
            store = (args.store or temp) / name.replace("/", "_")
            shutil.rmtree(store, ignore_errors=True)
            store.mkdir(parents=True)
            logs = args.out.parent / "suite-logs"
            logs.mkdir(parents=True, exist_ok=True)
            cold, cold_exit = run_once(name, "1st run (cold)", command, store, logs / f"{name}-cold.log")
            warm, warm_exit = run_once(name, "2nd run (warm)", command, store, logs / f"{name}-warm.log")
            result = {"cold_s": cold, "warm_s": warm, "cold_exit": cold_exit, "warm_exit": warm_exit}
            if cold_exit == 0 and warm_exit == 0 and warm > 0:
                result["ratio"] = cold / warm
            else:
                result["note"] = "a run failed; no ratio (see suite-logs)"
            suites[name] = result
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)

    if any("cold_s" in s for s in suites.values()):
        print(f"{'suite':<24}{'1st run (cold)':>16}{'2nd run (warm)':>17}{'ratio':>9}")
        for name, s in suites.items():
            if "cold_s" in s:
                ratio = f"{s['ratio']:.1f}x" if "ratio" in s else "failed"
                print(f"{name:<24}{s['cold_s']:>14.2f} s{s['warm_s']:>15.2f} s{ratio:>9}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"schema": 1, "suites": suites}, indent=2) + "\n")
    failed = [n for n, s in suites.items() if "note" in s]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
