#!/usr/bin/python3
"""Checks that the folders of core/src include only folders below them, public headers included.

The order is ARCHITECTURE.md's list of core/src's folders between the markers
`<!-- layers: lowest first ... -->` and `<!-- end layers -->`, lowest first: each line that starts
with four spaces and `name/` then a space names a folder (sub-folders such as `storage/local/`
and the lines that continue a description are not read). A folder of core/src that the list
lacks is an error too (a new folder gets its place in the list first).

Each public header (core/include/cubby/) belongs to a layer, as PUBLIC_HEADERS below says: the
folder of core/src that defines what it declares, or BOTTOM, below every folder, for the plain
types and the vocabulary every layer shares (they include no other layer's header). Every
`#include "folder/..."` and `#include "cubby/..."` of a file under core/src/<folder>/, and every
`#include "cubby/..."` of a public header, must name a header of its own layer or a lower one.
Includes of the standard and system headers (`<...>`) are not checked.

  ci/check_layers.py [ROOT]     # ROOT: the repository (default: this script's parent's parent)

Exit status 0 when every include points down, 1 with one line per arrow against the order
(file:line, the two layers, the fix) or per public header without a layer, 2 when the list cannot
be read. Standard library only (run by /usr/bin/python3 from ci/lint.sh).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

BEGIN = "<!-- layers: lowest first"
END = "<!-- end layers -->"
ITEM = re.compile(r"^    ([a-z0-9_]+)/\s")
INCLUDE = re.compile(r'^\s*#\s*include\s*"(([^"/]+)/[^"]*)"')
SOURCES = (".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh", ".inc")
PUBLIC = "cubby"  # core/include/cubby/, included as "cubby/<name>"

# The layer below every folder of the list: the public headers of plain types (no function is
# declared there) that several layers share, and the library's export and version macros.
BOTTOM = "(bottom)"

# Each public header's layer: the folder of core/src that defines what it declares (a header made
# from `<name>.in` at configure time is listed as `<name>`). A new public header gets its line here.
PUBLIC_HEADERS = {
    "export.h": BOTTOM,
    "version.hpp": BOTTOM,
    "types.hpp": BOTTOM,
    "error.hpp": "util",
    "stats.hpp": "stats",
    "stats_summary.hpp": "stats",
    "config.hpp": "config",
    "driver.hpp": "cuda",
    "nvrtc.hpp": "cuda",
    "key.hpp": "key",
    "entry.hpp": "format",
    "cubin.hpp": "format",
    "demangle.hpp": "names",
    "recover.hpp": "names",
    "cache.hpp": "cache",
    "prefetch.hpp": "warm",
    "cubby.h": "api",
    "cubby.hpp": "api",
}


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


def describe(layer: str) -> str:
    return "the bottom layer" if layer == BOTTOM else f"{layer}/"


def public_name(path: Path) -> str:
    """The name a public header is included by: `version.hpp.in` is included as version.hpp."""
    return path.name[:-3] if path.name.endswith(".in") else path.name


def include_layer(target: str, top: str, rank: dict[str, int]) -> str | None:
    """The layer of an include of "`top`/...", `target` its whole path; None when unchecked."""
    if top == PUBLIC:
        return PUBLIC_HEADERS.get(target[len(PUBLIC) + 1:])
    return top if top in rank else None


def check_file(root: Path, path: Path, own: str, rank: dict[str, int]) -> list[str]:
    """One message per include of `path` (of layer `own`) that points up or names no layer."""
    relative = path.relative_to(root)
    problems: list[str] = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, start=1):
        found = INCLUDE.match(line)
        if not found:
            continue
        target, top = found.group(1), found.group(2)
        if top == PUBLIC and target[len(PUBLIC) + 1:] not in PUBLIC_HEADERS:
            problems.append(f"{relative}:{number}: includes {target}, which has no layer in "
                            "ci/check_layers.py's PUBLIC_HEADERS; add it there with the folder "
                            "that defines it")
            continue
        other = include_layer(target, top, rank)
        if other is None or other == own or rank[other] <= rank[own]:
            continue
        named = f"{target} of {describe(other)}" if top == PUBLIC else f"{other}/"
        problems.append(
            f"{relative}:{number}: {describe(own)} includes {named}, a higher layer "
            f"(ARCHITECTURE.md lists {describe(own)} below {describe(other)}); move what it "
            f"needs down to {describe(own)} or below (plain types: cubby/types.hpp), or the "
            "including code up")
    return problems


def find_arrows(root: Path, order: list[str]) -> list[str]:
    """One message per include of core/src or core/include/cubby that runs against `order` (or
    leaves it), and per public header without a layer."""
    rank = {BOTTOM: -1} | {folder: index for index, folder in enumerate(order)}
    src = root / "core" / "src"
    public = root / "core" / "include" / PUBLIC
    problems: list[str] = []
    folders = sorted(p.name for p in src.iterdir() if p.is_dir()) if src.is_dir() else []
    for folder in folders:
        if folder not in rank:
            problems.append(f"core/src/{folder}/: not in ARCHITECTURE.md's folder list; "
                            "add it there at its place (lowest first)")
    for name, layer in sorted(PUBLIC_HEADERS.items()):
        present = (public / name).exists() or (public / f"{name}.in").exists()
        if layer not in rank and present:
            problems.append(f"core/include/{PUBLIC}/{name}: its layer {layer}/ "
                            "(ci/check_layers.py's PUBLIC_HEADERS) is not in ARCHITECTURE.md's "
                            "folder list")
    headers = sorted(p for p in public.iterdir() if p.is_file()) if public.is_dir() else []
    for path in headers:
        own = PUBLIC_HEADERS.get(public_name(path))
        if own is None:
            problems.append(f"{path.relative_to(root)}: a public header with no layer; add it "
                            "to ci/check_layers.py's PUBLIC_HEADERS with the folder of core/src "
                            "that defines what it declares")
        elif own in rank:
            problems.extend(check_file(root, path, own, rank))
    for path in sorted(src.rglob("*")):
        if not path.is_file() or path.suffix not in SOURCES:
            continue
        relative = path.relative_to(root)
        own = relative.parts[2] if len(relative.parts) > 3 else None
        if own not in rank:
            continue  # reported above (or a file directly in core/src)
        problems.extend(check_file(root, path, own, rank))
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
