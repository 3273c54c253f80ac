#!/usr/bin/python3
"""Whole-suite benchmark: runs each test suite as a whole process three times on one store — first on
an empty store (cold), then again (warm), then after a header edit with its manifest present (edit)
— and reports "1st run (cold) / 2nd run (warm) / after a header edit" with the ratios.

  whole_suite.py --suite NAME=COMMAND [--suite ...] [--skip NAME=REASON ...] --out suite.json
                 [--store DIR] [--no-edit] [--edit-serial] [--cubby CLI]

COMMAND is run with `bash -c` and CUBBY_DIR set to a fresh store (a temporary folder, or
DIR/NAME when --store is given; an existing DIR/NAME is emptied first).

The edit run: a header edit or a toolchain upgrade changes every key of the suite, while the
suite's manifest (recorded by the cold run under manifests/) still names what it compiles. The
faithful and simplest way to get that state is to delete the store's entries/ folder and keep
manifests/ (and the rest): every key misses, the recipes are there. The suite then runs with
prefetch on (the default: the harness and the pytest plugin start `cubby warm --prefetch`), so
its workers compile ahead of the tests. --edit-serial also runs the same edited state with
CUBBY_PREFETCH=0 (edit_serial_s: what the edit costs without the prefetch); --no-edit leaves
the edit run out.

With --cubby (the `cubby` tool), each run also records what the store's stats (`cubby stats
--json`, the counters every process of the run added) gained during it: RUN_hits (memory, disk
and remote hits), RUN_misses and RUN_compile_saved_s (compile time the hits saved), for RUN of
cold, warm, edit and edit_serial; a tool that fails is reported once and the fields left out.

A run that exits non-zero is reported with its exit status and the last lines of its output, and
the suite gets no ratio for it; the other suites still run. Writes {"schema": 1, "suites": {NAME:
{cold_s, warm_s, ratio, cold_exit, warm_exit, [edit_s, edit_exit, edit_ratio (cold_s / edit_s),]
[edit_serial_s, edit_serial_exit,] [RUN_hits, RUN_misses, RUN_compile_saved_s,] [note]} or
{skipped: REASON}}}; the edit and stats fields are optional (files without them, from older
versions, stay valid schema 1).
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


def run_once(name: str, label: str, command: str, store: Path, log: Path,
             extra_env: dict[str, str] | None = None) -> tuple[float, int]:
    """Runs `command` with CUBBY_DIR=store (and `extra_env`); shows elapsed time every 10 s while it runs."""
    env = dict(os.environ, CUBBY_DIR=str(store), **(extra_env or {}))
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


class StoreStats:
    """The counters a run added to a store (`cubby stats --json` before and after); off without a tool."""

    def __init__(self, cli: str | None):
        self.cli = cli
        self.last: dict[str, float] | None = None

    def snapshot(self, store: Path) -> dict[str, float] | None:
        if not self.cli:
            return None
        try:
            done = subprocess.run([self.cli, "stats", "--dir", str(store), "--json"], capture_output=True, text=True,
                                  timeout=60)
            data = json.loads(done.stdout) if done.returncode == 0 else None
        except (OSError, subprocess.SubprocessError, ValueError):
            data = None
        if not isinstance(data, dict):
            say(f"`{self.cli} stats --json` failed; the runs' hits and misses are left out")
            self.cli = None
            return None
        number = lambda key: float(data.get(key) or 0)  # noqa: E731
        return {"hits": number("hits_memory") + number("hits_disk") + number("hits_remote"),
                "misses": number("misses"), "compile_saved_s": number("compile_ms_saved") / 1000}

    def start(self, store: Path) -> None:
        self.last = self.snapshot(store)

    def add_run(self, store: Path, field: str, result: dict) -> None:
        """Adds FIELD_hits, FIELD_misses and FIELD_compile_saved_s: what the store gained since the last call."""
        now = self.snapshot(store)
        if now is not None and self.last is not None:
            for key, value in now.items():
                gained = value - self.last[key]
                result[f"{field}_{key}"] = round(gained, 6) if key == "compile_saved_s" else int(round(gained))
        self.last = now


def edit_runs(name: str, command: str, store: Path, logs: Path, result: dict, serial: bool,
              stats: StoreStats) -> None:
    """The runs after a header edit (see the top of this file): every entry of `store` removed, its
    manifests kept, then the suite with prefetch on (and, with `serial`, again with CUBBY_PREFETCH=0).
    Adds edit_s, edit_exit, edit_ratio (and edit_serial_s, edit_serial_exit) to `result`."""
    runs = [("edit", "3rd run (after a header edit, prefetch)", None)]
    if serial:
        runs.append(("edit_serial", "3rd run again (after a header edit, CUBBY_PREFETCH=0)",
                     {"CUBBY_PREFETCH": "0"}))
    for field, label, env in runs:
        if not any((store / "manifests").glob("*.manifest")):
            say(f"{name}: {label}: the store has no manifest (does this cubby record suites?); "
                "the run compiles like a cold one")
        shutil.rmtree(store / "entries", ignore_errors=True)  # every key misses; manifests/ stays
        seconds, status = run_once(name, label, command, store, logs / f"{name}-{field.replace('_', '-')}.log", env)
        result[f"{field}_s"], result[f"{field}_exit"] = seconds, status
        stats.add_run(store, field, result)
        if status != 0:
            result["note"] = "a run failed; no ratio for it (see suite-logs)"
    if result.get("edit_exit") == 0 and result.get("cold_exit") == 0 and result["edit_s"] > 0:
        result["edit_ratio"] = result["cold_s"] / result["edit_s"]


def table(suites: dict[str, dict]) -> str:
    """The runs of each suite that ran, one line each, in seconds, with the ratios over cold."""
    edit = any("edit_s" in s for s in suites.values())
    serial = any("edit_serial_s" in s for s in suites.values())
    header = f"{'suite':<24}{'1st run (cold)':>16}{'2nd run (warm)':>17}{'ratio':>9}"
    if edit:
        header += f"{'after edit':>14}{'ratio':>9}"
    if serial:
        header += f"{'edit, no prefetch':>19}"
    lines = [header]
    for name, s in suites.items():
        if "cold_s" not in s:
            continue
        ratio = f"{s['ratio']:.1f}x" if "ratio" in s else "failed"
        line = f"{name:<24}{s['cold_s']:>14.2f} s{s['warm_s']:>15.2f} s{ratio:>9}"
        if edit:
            edit_s = f"{s['edit_s']:.2f} s" if "edit_s" in s else "-"
            edit_ratio = f"{s['edit_ratio']:.1f}x" if "edit_ratio" in s else ("failed" if "edit_s" in s else "-")
            line += f"{edit_s:>14}{edit_ratio:>9}"
        if serial:
            serial_s = f"{s['edit_serial_s']:.2f} s" if "edit_serial_s" in s else "-"
            line += f"{serial_s:>19}"
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", action="append", default=[], help="NAME=COMMAND")
    parser.add_argument("--skip", action="append", default=[], help="NAME=REASON (reported as skipped)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--store", type=Path, help="parent folder of the stores (default: temporary)")
    parser.add_argument("--no-edit", dest="edit", action="store_false",
                        help="leave out the run after a header edit (manifest present)")
    parser.add_argument("--edit-serial", action="store_true",
                        help="also run the edited state with CUBBY_PREFETCH=0 (edit_serial_s)")
    parser.add_argument("--cubby", help="the cubby tool: record each run's hits, misses and compile time saved")
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
            stats = StoreStats(args.cubby)
            stats.start(store)
            result = {}
            cold, cold_exit = run_once(name, "1st run (cold)", command, store, logs / f"{name}-cold.log")
            stats.add_run(store, "cold", result)
            warm, warm_exit = run_once(name, "2nd run (warm)", command, store, logs / f"{name}-warm.log")
            stats.add_run(store, "warm", result)
            result.update({"cold_s": cold, "warm_s": warm, "cold_exit": cold_exit, "warm_exit": warm_exit})
            if cold_exit == 0 and warm_exit == 0 and warm > 0:
                result["ratio"] = cold / warm
            else:
                result["note"] = "a run failed; no ratio (see suite-logs)"
            if args.edit:
                edit_runs(name, command, store, logs, result, args.edit_serial, stats)
            suites[name] = result
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)

    if any("cold_s" in s for s in suites.values()):
        print(table(suites))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"schema": 1, "suites": suites}, indent=2) + "\n")
    failed = [n for n, s in suites.items() if "note" in s]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
