"""Tests of ci/lint_cache.py (ci/lint.sh's clang-tidy result cache): a unit is checked until it is
recorded clean, then skipped until the unit, a header its depfile lists, its compile command or
.clang-tidy changes; a unit without a depfile is always checked; only recorded keys count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / "ci" / "lint_cache.py"


def make_tree(root: Path) -> Path:
    """A source tree with core/a.cpp (depfile lists core/a.hpp) and core/b.cpp (no depfile)."""
    (root / "core").mkdir(parents=True)
    (root / ".clang-tidy").write_text("Checks: '-*,bugprone-*'\n")
    (root / "core" / "a.hpp").write_text("int a();\n")
    (root / "core" / "a.cpp").write_text('#include "a.hpp"\nint a() { return 1; }\n')
    (root / "core" / "b.cpp").write_text("int b() { return 2; }\n")
    build = root / "build"
    (build / "core").mkdir(parents=True)
    database = [{"directory": str(build / "core"), "file": str(root / "core" / name),
                 "command": f"c++ -O2 -o {name}.o -c {root / 'core' / name}"}
                for name in ("a.cpp", "b.cpp")]
    (build / "compile_commands.json").write_text(json.dumps(database))
    (build / "core" / "a.cpp.o.d").write_text("a.cpp.o: ../../core/a.cpp \\\n ../../core/a.hpp\n")
    return build


def split(root: Path, build: Path, cache: Path) -> dict[str, list[str]]:
    done = subprocess.run([sys.executable, str(CACHE), "split", str(build), str(cache), str(root)],
                          input="core/a.cpp\ncore/b.cpp\n", capture_output=True, text=True,
                          check=True)
    return {line.split()[1]: line.split() for line in done.stdout.splitlines()}


def store(cache: Path, *keys: str) -> None:
    subprocess.run([sys.executable, str(CACHE), "store", str(cache), *keys], check=True)


def test_a_unit_recorded_clean_is_skipped_until_what_it_reads_changes(tmp_path):
    root, cache = tmp_path / "src", tmp_path / "cache"
    build = make_tree(root)
    first = split(root, build, cache)
    assert first["core/a.cpp"][0] == "check" and len(first["core/a.cpp"][2]) == 64
    assert first["core/b.cpp"] == ["check", "core/b.cpp", "-"]  # no depfile: no key
    assert split(root, build, cache)["core/a.cpp"][0] == "check"  # nothing recorded yet
    store(cache, first["core/a.cpp"][2], "-")
    assert split(root, build, cache)["core/a.cpp"] == ["clean", "core/a.cpp"]
    assert split(root, build, cache)["core/b.cpp"][0] == "check"

    (root / "core" / "a.hpp").write_text("int a();  // edited\n")  # a header the depfile lists
    edited = split(root, build, cache)["core/a.cpp"]
    assert edited[0] == "check" and edited[2] != first["core/a.cpp"][2]
    (root / "core" / "a.hpp").write_text("int a();\n")
    assert split(root, build, cache)["core/a.cpp"][0] == "clean"  # back as it was recorded

    (root / ".clang-tidy").write_text("Checks: '-*,performance-*'\n")
    assert split(root, build, cache)["core/a.cpp"][0] == "check"


def test_another_compile_command_is_another_key(tmp_path):
    root, cache = tmp_path / "src", tmp_path / "cache"
    build = make_tree(root)
    store(cache, split(root, build, cache)["core/a.cpp"][2])
    database = json.loads((build / "compile_commands.json").read_text())
    database[0]["command"] = database[0]["command"].replace("-O2", "-O2 -DEXTRA")
    (build / "compile_commands.json").write_text(json.dumps(database))
    assert split(root, build, cache)["core/a.cpp"][0] == "check"
