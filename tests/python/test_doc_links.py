"""Every link of the documentation resolves: each relative target of a Markdown link in README.md,
ARCHITECTURE.md, docs/*.md and bench/results/README.md exists, and each `#anchor` names a heading
of its target (GitHub's slugs). Every repository path a tracked file mentions (`docs/guide.md`,
`core/src/util/io.cpp`, `tests/...`) exists too, from the repository's root or the file's folder,
so a moved source leaves no stale comment behind. The checkers are tried on a tree with broken
links first, so a checker that finds nothing fails."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"`+[^`]*`+")
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
PATH_MENTION = re.compile(
    r"(?<![\w/.$<-])((?:bench|ci|cli|cmake|core|docs|fuzz|harness|pytest_plugin|tests)/[\w./-]*\w"
    r"\.(?:cmake|cpp|h|hpp|in|json|jsonl|md|mjs|py|sh|txt))\b")
# Generated, not tracked: what ci/bench.sh and the builds write.
GENERATED = ("bench/out/", "build/")
# Files whose paths name other trees: CuPy's repository (its test files), and the synthetic
# trees the Python tests build.
OTHER_TREES = ("bench/suite/cupy_files.txt", "bench/suite/cupy_tests.sh", "tests/python/")


def documentation(root: Path) -> list[Path]:
    """The Markdown files whose links are checked."""
    files = [root / "README.md", root / "ARCHITECTURE.md", root / "bench" / "results" / "README.md"]
    files += sorted((root / "docs").glob("*.md"))
    return [path for path in files if path.is_file()]


def prose_lines(text: str, keep_code_spans: bool = False) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with code spans blanked unless kept."""
    lines: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, line if keep_code_spans else CODE_SPAN.sub("", line)))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: links and code marks dropped, lower case, punctuation but `-`
    and `_` removed, spaces made `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings (a repeated slug gets -1, -2, ...)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(path.read_text(encoding="utf-8"), keep_code_spans=True):
        heading = HEADING.match(line)
        if not heading:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(root: Path) -> list[str]:
    """'file:line: target: why' for every relative link of the documentation that does not
    resolve."""
    problems: list[str] = []
    for path in documentation(root):
        text = path.read_text(encoding="utf-8")
        for number, line in prose_lines(text):
            targets = INLINE_LINK.findall(line)
            reference = REFERENCE_LINK.match(line)
            if reference:
                targets.append(reference.group(1))
            for target in targets:
                if EXTERNAL.match(target):
                    continue
                file_part, _, anchor = target.partition("#")
                destination = (path.parent / file_part).resolve() if file_part else path
                where = f"{path.relative_to(root)}:{number}: {target}"
                if not destination.exists():
                    problems.append(f"{where}: no such file")
                elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
                    problems.append(f"{where}: no heading with the anchor #{anchor}")
    return problems


def missing_mentions(root: Path, files: list[Path]) -> list[str]:
    """'file: path' for every repository path a file mentions that exists neither from the root
    nor from the file's folder (generated outputs and other trees left out)."""
    problems: list[str] = []
    for path in files:
        name = path.relative_to(root).as_posix()
        if name.startswith(OTHER_TREES):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for mention in sorted(set(PATH_MENTION.findall(text))):
            if mention.startswith(GENERATED):
                continue
            if not (root / mention).exists() and not (path.parent / mention).exists():
                problems.append(f"{name}: {mention}")
    return problems


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def test_the_checker_reports_a_missing_file_a_missing_anchor_and_a_stale_mention(tmp_path: Path) -> None:
    write(tmp_path, {
        "README.md": "# Top\nSee [guide](docs/guide.md#install), [gone](docs/gone.md) and\n"
                     "[bad anchor](docs/guide.md#nowhere), [web](https://example.com), [here](#top).\n"
                     "```\n[in a fence](docs/fenced.md)\n```\n`[in a span](docs/span.md)`\n",
        "docs/guide.md": "# Guide\n## Install\n[back](../README.md#top)\n[ref]: missing.md\n"
                         "[spans](#the-cubby-tool)\n## The `cubby` tool\n",
        "core/code.cpp": "// see docs/guide.md, docs/old.md, core/gone.cpp and cmake/here.cmake;\n"
                         "// bench/out/results.json is written by a run\n",
        "core/cmake/here.cmake": "",
    })
    assert broken_links(tmp_path) == [
        "README.md:2: docs/gone.md: no such file",
        "README.md:3: docs/guide.md#nowhere: no heading with the anchor #nowhere",
        "docs/guide.md:4: missing.md: no such file",
    ]
    assert missing_mentions(tmp_path, [tmp_path / "core/code.cpp"]) == [
        "core/code.cpp: core/gone.cpp", "core/code.cpp: docs/old.md"]


def test_slugs_follow_githubs_rule() -> None:
    assert slug("CuPy and cuda.core through cubby") == "cupy-and-cudacore-through-cubby"
    assert slug("The `cubby` tool at a glance") == "the-cubby-tool-at-a-glance"
    assert slug("Layers (top depends on bottom)") == "layers-top-depends-on-bottom"
    assert slug("Build vs buy: HTTP") == "build-vs-buy-http"


def test_every_link_of_the_documentation_resolves() -> None:
    assert documentation(REPO), "no documentation found"
    assert broken_links(REPO) == []


def test_every_path_a_tracked_file_mentions_exists() -> None:
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    files = [REPO / name for name in listed.stdout.decode().split("\0") if name]
    files = [path for path in files if path.is_file()]
    assert missing_mentions(REPO, files) == []
