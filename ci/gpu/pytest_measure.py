"""Times tests/python/gpu/test_cupy_mdspan.py cold and warm with CuPy's own kernel cache and with
the cubby adapter, plus a "fresh machine" store filled only by `cubby export` + `cubby import`.
Called by ci/gpu/pytest.sh (see there); writes timings.json, timings.txt and runs/*.log."""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--suite", required=True)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    out, work = Path(args.out), Path(args.work)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    runs: list = []
    failed = False

    def run(name: str, cupy_dir: Path, *extra: str) -> float:
        nonlocal failed
        env = dict(os.environ, CUPY_CACHE_DIR=str(cupy_dir))
        command = [sys.executable, "-m", "pytest", args.suite, "-q", "-p", "no:cacheprovider",
                   "-p", "cubby.plugin", *extra]
        start = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        (out / "runs" / f"{name}-{len([r for r in runs if r['name'] == name])}.log").write_text(
            " ".join(command) + "\n" + done.stdout + done.stderr)
        passed = re.search(r"(\d+) passed", done.stdout)
        runs.append({"name": name, "seconds": round(seconds, 3), "exit": done.returncode,
                     "passed": int(passed.group(1)) if passed else 0,
                     "cubby": [l for l in done.stdout.splitlines()
                               if l.startswith(("hits:", "cupy:", "store:"))]})
        print(f"  {name}: {seconds:.2f} s (exit {done.returncode})", file=sys.stderr, flush=True)
        if done.returncode != 0:
            failed = True
        return seconds

    cupy_cache, store = work / "cupy-cache", work / "store"
    run("cupy-cold", cupy_cache, "--no-cubby-cupy", f"--cubby-dir={work / 'unused'}")
    run("cubby-cold", work / "cupy-unused", f"--cubby-dir={store}")
    for _ in range(args.repeat):
        run("cupy-warm", cupy_cache, "--no-cubby-cupy", f"--cubby-dir={work / 'unused'}")
        run("cubby-warm", work / "cupy-unused", f"--cubby-dir={store}", "--cubby-require-warm")

    fresh_note = ""
    has_export = subprocess.run([args.cli, "export", "--help"], capture_output=True).returncode == 0
    if has_export:
        archive, fresh = work / "store.tar", work / "fresh-store"
        steps = [[args.cli, "export", "--dir", str(store), str(archive)],
                 [args.cli, "import", "--dir", str(fresh), str(archive)]]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True)
            (out / "runs" / f"{step[1]}.log").write_text(" ".join(step) + "\n" + done.stdout +
                                                        done.stderr)
            if done.returncode != 0:
                fresh_note = f"`{' '.join(step[1:2])}` failed (runs/{step[1]}.log)"
                failed = True
                break
        if not fresh_note:
            for index in range(args.repeat):
                run("fresh-machine", work / f"cupy-fresh-{index}", f"--cubby-dir={fresh}",
                    "--cubby-require-warm")
    else:
        fresh_note = "skipped: this cubby has no `export`/`import` commands"

    def median(name: str):
        values = [r["seconds"] for r in runs if r["name"] == name]
        return statistics.median(values) if values else None

    table = {name: median(name) for name in
             ("cupy-cold", "cupy-warm", "cubby-cold", "cubby-warm", "fresh-machine")}
    lines = ["test_cupy_mdspan.py: 25 modules, 350 instantiations, 100 tests; wall seconds "
             f"per pytest process (warm: median of {args.repeat})"]
    for name, value in table.items():
        lines.append(f"  {name:<14} {'-' if value is None else f'{value:8.2f}'}")
    goals = {}
    if table["cubby-warm"] and table["cupy-warm"]:
        goals["cubby_warm_vs_cupy_warm"] = round(table["cubby-warm"] / table["cupy-warm"], 3)
        lines.append(f"goal cubby-warm <= cupy-warm: ratio {goals['cubby_warm_vs_cupy_warm']} "
                     f"({'met' if goals['cubby_warm_vs_cupy_warm'] <= 1.10 else 'NOT met'}, 10% "
                     "noise allowance)")
    if table["fresh-machine"] and table["cubby-warm"]:
        goals["fresh_vs_cubby_warm"] = round(table["fresh-machine"] / table["cubby-warm"], 3)
        lines.append(f"goal fresh-machine ~ cubby-warm: ratio {goals['fresh_vs_cubby_warm']} "
                     f"({'met' if goals['fresh_vs_cubby_warm'] <= 1.10 else 'NOT met'})")
    if fresh_note:
        lines.append(f"fresh-machine: {fresh_note}")
    if table["cubby-cold"] and table["cubby-warm"]:
        lines.append(f"cubby cold/warm speed-up: {table['cubby-cold'] / table['cubby-warm']:.1f}x")
    (out / "timings.txt").write_text("\n".join(lines) + "\n")
    (out / "timings.json").write_text(json.dumps(
        {"medians_s": table, "goals": goals, "fresh_note": fresh_note, "runs": runs}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
