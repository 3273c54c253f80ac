#!/usr/bin/env python3
"""Line counts of cubby's C++ sources per folder, and the length limits lint enforces.

    ci/file-lengths.py [--root DIR] [REV]   the working tree (tracked and new files, not ignored)
                                            or the files of git revision REV, of the repository
                                            DIR (default: this script's); python3 standard
                                            library only

Prints the number of files, the files over their limit, and per folder (core/src, core/include,
cli, harness, bench, fuzz, tests) the file count, the median length and the largest file.

Limits (lines of a first-party C++ file: .cpp .hpp .h .cc .c .cu .cuh):
  - 600 for every source file (core/, cli/, harness/, bench/, fuzz/): one concept per file; a
    file that grows past it is split by concept;
  - 1000 for test files (tests/): a test file holds one source file's cases and their fixtures;
  - generated files are not in git (build output), so none has a limit of its own here.
Exit status 0 when every file is within its limit, 1 with one line per file over it (the fix
named), 2 when REV is not a revision (or DIR no git repository). Run by ci/lint.sh.
"""
import argparse
import collections
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_LIMIT = 600
TEST_LIMIT = 1000
SUFFIXES = (".cpp", ".hpp", ".h", ".cc", ".c", ".cu", ".cuh")
FOLDERS = ("core/src", "core/include", "cli", "harness", "bench", "fuzz", "tests")
SKIPPED = ("build/", "third_party/", "bench/results/")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout


def folder_of(path: str) -> str:
    for folder in FOLDERS:
        if path.startswith(folder + "/"):
            return folder
    return "other"


def limit_of(path: str) -> int:
    return TEST_LIMIT if path.startswith("tests/") else SOURCE_LIMIT


def line_counts(root: Path, rev: str | None) -> list[tuple[int, str]]:
    """(lines, path) of every first-party C++ file of `rev`, or of the working tree when None."""
    if rev is None:
        paths = git(root, "ls-files", "--cached", "--others", "--exclude-standard").split("\n")
    else:
        paths = git(root, "ls-tree", "-r", "--name-only", rev).split("\n")
    counts = []
    for path in paths:
        if not path.endswith(SUFFIXES) or path.startswith(SKIPPED):
            continue
        if rev is None:
            file = root / path
            if not file.is_file():
                continue  # deleted, not yet committed
            text = file.read_text(encoding="utf-8", errors="replace")
        else:
            text = git(root, "show", f"{rev}:{path}")
        counts.append((text.count("\n"), path))
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("rev", nargs="?", default=None)
    arguments = parser.parse_args()
    rev = arguments.rev
    try:
        every = line_counts(arguments.root, rev)
    except subprocess.CalledProcessError as error:
        what = f"{rev} is not a revision of" if rev else "cannot list the files of"
        print(f"file-lengths: {what} {arguments.root}: {error.stderr.strip()}", file=sys.stderr)
        return 2
    groups: dict[str, list[tuple[int, str]]] = collections.defaultdict(list)
    for lines, path in every:
        groups[folder_of(path)].append((lines, path))
    too_long = sorted((path, lines) for lines, path in every if lines > limit_of(path))
    print(f"{rev or 'working tree'}: {len(every)} files; over their limit: "
          f"{', '.join(path for path, _ in too_long) or 'none'}")
    for folder, items in sorted(groups.items()):
        items.sort()
        median = statistics.median(lines for lines, _ in items)
        print(f"  {folder:14s} files {len(items):3d}  median {median:6.0f}  "
              f"largest {items[-1][0]:5d} {items[-1][1]}")
    for path, lines in too_long:
        print(f"{path}: {lines} lines, over the limit of {limit_of(path)}; split it by concept "
              f"(one concept per .hpp/.cpp pair; a test file per source file)", file=sys.stderr)
    return 1 if too_long else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `| head`
        sys.stderr.close()
        sys.exit(0)
