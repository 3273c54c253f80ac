#!/usr/bin/python3
"""Checks that the folders of core/src include only folders below them.

The order is ARCHITECTURE.md's list of core/src's folders between the markers
`<!-- layers: lowest first ... -->` and `<!-- end layers -->`, lowest first: each line that starts
with four spaces and `name/` then a space names a folder (sub-folders such as `storage/local/`
and the lines that continue a description are not read). Every `#include "folder/..."` of a
file under core/src/<folder>/ that names another listed folder must name a lower one. A folder
of core/src that the list lacks is an error too (a new folder gets its place in the list first).
Includes of the public headers (`cubby/...`), which every layer shares, and of the standard and
system headers (`<...>`) are not checked.

  ci/check_layers.py [ROOT]     # ROOT: the repository (default: this script's parent's parent)

Exit status 0 when every include points down, 1 with one line per arrow against the order
(file:line, the two folders, the fix), 2 when the list cannot be read.
Standard library only (run by /usr/bin/python3 from ci/lint.sh).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

BEGIN = "<!-- layers: lowest first"
END = "<!-- end layers -->"
ITEM = re.compile(r"^    ([a-z0-9_]+)/\s")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"/]+)/')
SOURCES = (".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh", ".inc")


class ListError(Exception):
    """ARCHITECTURE.md has no readable folder list."""


def read_order(architecture: Path) -> list[str]:
    """The folders of core/src, lowest first, as the marked list of `architecture` gives them."""
    try:
        text = architecture.read_text(encoding="utf-8")
    except OSError as error:
        raise ListError(f"cannot read {architecture}: {error.strerror}") from error
    start = text.find(BEGIN)
    end = text.find(END, start + 1)
    if start < 0 or end < 0:
        raise ListError(f"{architecture} has no folder list between '{BEGIN} ...-->' and '{END}'")
    order: list[str] = []
    for line in text[start + len(BEGIN):end].splitlines():
        found = ITEM.match(line)
        if not found:
            continue
        if found.group(1) in order:
            raise ListError(f"{architecture}: folder {found.group(1)}/ is listed twice")
        order.append(found.group(1))
    if not order:
        raise ListError(f"{architecture}: the folder list between the markers is empty")
    return order


def find_arrows(root: Path, order: list[str]) -> list[str]:
    """One message per include of core/src that runs against `order` (or leaves it)."""
    rank = {folder: index for index, folder in enumerate(order)}
    src = root / "core" / "src"
    problems: list[str] = []
    folders = sorted(p.name for p in src.iterdir() if p.is_dir()) if src.is_dir() else []
    for folder in folders:
        if folder not in rank:
            problems.append(f"core/src/{folder}/: not in ARCHITECTURE.md's folder list; "
                            "add it there at its place (lowest first)")
    for path in sorted(src.rglob("*")):
        if not path.is_file() or path.suffix not in SOURCES:
            continue
        relative = path.relative_to(root)
        own = relative.parts[2] if len(relative.parts) > 3 else None
        if own not in rank:
            continue  # reported above (or a file directly in core/src)
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for number, line in enumerate(lines, start=1):
            found = INCLUDE.match(line)
            if not found or found.group(1) == own or found.group(1) not in rank:
                continue
            other = found.group(1)
            if rank[other] > rank[own]:
                problems.append(
                    f"{relative}:{number}: {own}/ includes {other}/, a higher folder "
                    f"(ARCHITECTURE.md lists {own}/ below {other}/); move what it needs down "
                    f"to {own}/ or below, or the including code up")
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    try:
        order = read_order(root / "ARCHITECTURE.md")
    except ListError as error:
        print(f"[cubby layers] {error}", file=sys.stderr)
        return 2
    problems = find_arrows(root, order)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"[cubby layers] {len(problems)} include(s) against the folder order "
              f"({' < '.join(order)})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
