#!/usr/bin/env python3
"""Line counts of cubby's C++ sources at a git revision, per folder (the layout's size check).

    ci/file-lengths.py [REV]        REV default HEAD; python3 standard library only

Prints the number of files, the files over 600 lines, and per folder (core/src, core/include,
cli, harness) the file count, the median length and the largest file."""
import argparse
import collections
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 600


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                          check=True).stdout


def folder_of(path: str) -> str | None:
    for folder in ("core/src", "core/include", "cli", "harness"):
        if path.startswith(folder + "/"):
            return folder
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", default="HEAD")
    rev = parser.parse_args().rev
    try:
        files = git("ls-tree", "-r", "--name-only", rev).split("\n")
    except subprocess.CalledProcessError as error:
        print(f"file-lengths: {rev} is not a revision of {ROOT}: {error.stderr.strip()}",
              file=sys.stderr)
        return 2
    groups: dict[str, list[tuple[int, str]]] = collections.defaultdict(list)
    for path in files:
        folder = folder_of(path)
        if folder is None or not path.endswith((".cpp", ".hpp", ".h")):
            continue
        groups[folder].append((git("show", f"{rev}:{path}").count("\n"), path))
    every = [item for items in groups.values() for item in items]
    long_files = sorted((path for lines, path in every if lines > LIMIT))
    print(f"{rev}: {len(every)} files; over {LIMIT} lines: {', '.join(long_files) or 'none'}")
    for folder, items in sorted(groups.items()):
        items.sort()
        median = statistics.median(lines for lines, _ in items)
        print(f"  {folder:14s} files {len(items):3d}  median {median:6.0f}  "
              f"largest {items[-1][0]:5d} {items[-1][1]}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `| head`
        sys.stderr.close()
        sys.exit(0)
