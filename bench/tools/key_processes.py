#!/usr/bin/python3
"""Key derivation in fresh processes, two libcubby builds compared: each process derives the keys
of 25 CuPy-like mdspan programs (CuPy 14's include folders: its bundled CCCL, its own headers, the
toolkit's include folder) through the C API (`cubby.Cache(dir).key`), as a warm CuPy test file does
before it loads its kernels. The libraries alternate every round, each with its own store (warmed
by one untimed process first: toolkit names and, where the library keeps one, the scan record).

  key_processes.py --lib NAME=PATH [--lib NAME=PATH ...] [--env NAME:VAR=VALUE ...] [--rounds 15]
                   [--work DIR] [--out FILE]

--env sets a variable for the processes of library NAME only (e.g. two names for one library,
one with CUBBY_SCAN_WATCH=0).

Prints and writes (--out) a JSON object: per library the median, min and max over the rounds of
the 25 keys' wall time and CPU time inside the process (time.perf_counter / time.process_time
around the 25 `key` calls: Python start-up and library loading excluded), and of the whole
process's wall time. Needs the toolkit's CCCL (CUDA_PATH, else /usr/local/cuda) and NVRTC.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES, PER_MODULE = 25, 14
SOURCE = (ROOT / "bench" / "workloads" / "cupy_like_mdspan.cu").read_text()

CHILD = r"""
import json, sys, time
import cubby
spec = json.loads(sys.argv[1])
cache = cubby.Cache(dir=spec["store"])
wall, cpu = time.perf_counter(), time.process_time()
for program in spec["programs"]:
    cache.key(program["source"], program["names"], spec["options"], arch="sm_90")
print(json.dumps({"keys_s": time.perf_counter() - wall, "keys_cpu_s": time.process_time() - cpu}))
"""


def layout(work: Path) -> list:
    """CuPy's include folders under `work`, CCCL linked from the toolkit; returns the options."""
    cuda = Path(os.environ.get("CUDA_PATH") or "/usr/local/cuda")
    cccl = cuda / "include" / "cccl"
    if not (cccl / "cuda").is_dir():
        sys.exit(f"no CCCL at {cccl} (set CUDA_PATH)")
    include = work / "cupy" / "_core" / "include"
    bundled = include / "cupy" / "_cccl"
    for folder, links in (("libcudacxx", ("cuda", "nv")), ("cub", ("cub",)),
                          ("thrust", ("thrust",))):
        (bundled / folder).mkdir(parents=True, exist_ok=True)
        for name in links:
            if not (bundled / folder / name).exists():
                (bundled / folder / name).symlink_to(cccl / name)
    (include / "cupy" / "carray.cuh").write_text("#pragma once\n#include <cuda/std/cstddef>\n")
    return [f"-I{bundled / 'cub'}", f"-I{bundled / 'thrust'}", f"-I{bundled / 'libcudacxx'}",
            "--std=c++17", f"-I{include}", f"-I{cuda / 'include'}", "-ftz=true",
            "--device-as-default-execution-space"]


def programs() -> list:
    types = ("float", "double", "int", "long long")
    layouts = ("cuda::std::layout_right", "cuda::std::layout_left")
    out = []
    for m in range(MODULES):
        names = [f"m{m}::apply<{types[c % 4]}, cuda::std::dextents<size_t, {1 + c % 3}>, "
                 f"{layouts[(c // 3) % 2]}>" for c in (5 * m + i for i in range(PER_MODULE))]
        out.append({"source": SOURCE.replace("@NS@", f"m{m}"), "names": names})
    return out


def run_child(lib: str, spec: dict, extra: dict) -> dict:
    env = dict(os.environ, CUBBY_LIBRARY=lib,
               PYTHONPATH=str(ROOT / "pytest_plugin" / "src"), **extra)
    env.pop("CUBBY_DIR", None)
    import time
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], env=env,
                          capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - start
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", action="append", required=True, help="NAME=PATH of libcubby.so")
    parser.add_argument("--env", action="append", default=[],
                        help="NAME:VAR=VALUE, a variable for library NAME's processes")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--work")
    parser.add_argument("--out")
    args = parser.parse_args()
    libs = dict(item.split("=", 1) for item in args.lib)
    extra = {name: {} for name in libs}
    for item in args.env:
        name, _, assignment = item.partition(":")
        variable, _, value = assignment.partition("=")
        if name not in libs or not variable:
            parser.error(f"--env {item!r}: expected NAME:VAR=VALUE with NAME one of --lib's")
        extra[name][variable] = value
    work = Path(args.work or tempfile.mkdtemp(prefix="cubby-key-processes-"))
    work.mkdir(parents=True, exist_ok=True)
    options = layout(work)
    base = {"options": options, "programs": programs()}
    runs = {name: [] for name in libs}
    for name, lib in libs.items():
        run_child(lib, dict(base, store=str(work / f"store-{name}")), extra[name])  # warms
    for _ in range(args.rounds):
        for name, lib in libs.items():
            runs[name].append(run_child(lib, dict(base, store=str(work / f"store-{name}")),
                                        extra[name]))
    summary = {"command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
               "rounds": args.rounds, "keys_per_process": MODULES, "libraries": {}}
    for name, results in runs.items():
        row = {}
        for field in ("keys_s", "keys_cpu_s", "process_s"):
            values = [r[field] for r in results]
            row[field] = {"median": round(statistics.median(values), 4),
                          "min": round(min(values), 4), "max": round(max(values), 4)}
        summary["libraries"][name] = {"path": libs[name], "env": extra[name], **row}
    text = json.dumps(summary, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
