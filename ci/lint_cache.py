#!/usr/bin/env python3
"""clang-tidy's result cache for ci/lint.sh: a translation unit clang-tidy found clean is not
checked again while nothing it reads has changed.

A unit's key is a SHA-256 over clang-tidy's version, the .clang-tidy file, the unit's compile
command, and the bytes of the unit and of every header its compiler depfile (written by the build:
-MF, else OBJECT.d) lists. A unit without a depfile (not built yet, fuzz/) has no key: it is always checked.
The cache is a folder of empty files named by key (only clean results are kept).

  lint_cache.py split BUILD_DIR CACHE_DIR ROOT < units     prints "check UNIT KEY" or "clean UNIT"
                                                            (KEY "-" when the unit has none)
  lint_cache.py store CACHE_DIR KEY...                      records these keys as clean
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

_digests: dict = {}


def _file_digest(path: Path) -> bytes:
    key = str(path)
    if key not in _digests:
        try:
            _digests[key] = hashlib.sha256(path.read_bytes()).digest()
        except OSError:
            _digests[key] = b"missing"
    return _digests[key]


def _depfile_inputs(directory: Path, command: str) -> list | None:
    """The files the depfile of `command` lists (absolute), or None without a depfile."""
    args = shlex.split(command)
    if "-MF" in args:
        depfile = directory / args[args.index("-MF") + 1]
    elif "-o" in args:  # CMake's Makefiles write OBJECT.d (not in the database's command)
        depfile = directory / (args[args.index("-o") + 1] + ".d")
    else:
        return None
    try:
        text = depfile.read_text()
    except OSError:
        return None
    text = text.replace("\\\n", " ")
    _, _, deps = text.partition(":")
    return sorted({str((directory / name).resolve()) for name in deps.split()})


def split(build_dir: Path, cache_dir: Path, root: Path) -> None:
    database = json.loads((build_dir / "compile_commands.json").read_text())
    commands = {str(Path(entry["file"]).resolve()): entry for entry in database}
    try:
        version = subprocess.run(["clang-tidy", "--version"], capture_output=True,
                                 text=True).stdout.encode()
    except OSError:
        version = b"no clang-tidy"
    config = _file_digest(root / ".clang-tidy")
    for unit in sys.stdin.read().split("\n"):
        if not unit:
            continue
        entry = commands.get(str((root / unit).resolve()))
        inputs = None if entry is None else _depfile_inputs(Path(entry["directory"]),
                                                            entry["command"])
        if inputs is None:
            print(f"check {unit} -")
            continue
        digest = hashlib.sha256(version + config + entry["command"].encode())
        for name in [str((root / unit).resolve()), *inputs]:
            digest.update(name.encode() + b"\0" + _file_digest(Path(name)))
        key = digest.hexdigest()
        print(f"clean {unit}" if (cache_dir / key).exists() else f"check {unit} {key}")


def store(cache_dir: Path, keys: list) -> None:
    cache_dir.mkdir(parents=True, exist_ok=True)
    for key in keys:
        if key != "-":
            (cache_dir / key).touch()


def main() -> int:
    if len(sys.argv) >= 5 and sys.argv[1] == "split":
        split(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
    elif len(sys.argv) >= 3 and sys.argv[1] == "store":
        store(Path(sys.argv[2]), sys.argv[3:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
