"""Tests of ci/file-lengths.py: a C++ source over 600 lines or a test file over 1000 fails naming
the file and its limit; files at their limits pass; a revision is checked as committed; the
repository's own tree passes (the same check ci/lint.sh runs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / "ci" / "file-lengths.py"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def make_repo(root: Path, files: dict[str, int]) -> Path:
    """A git repository holding each file of `files` with that many lines (not committed)."""
    git(root, "init", "-q")
    for name, lines in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("// a line\n" * lines)
    return root


def run_check(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), "--root", str(root), *args],
                          capture_output=True, text=True, check=False)


def test_files_at_their_limits_pass(tmp_path):
    result = run_check(make_repo(tmp_path, {"core/src/a/a.cpp": 600, "cli/b.hpp": 600,
                                            "tests/core/a/test_a.cpp": 1000,
                                            "docs/long.md": 5000}))
    assert result.returncode == 0, result.stderr
    assert "over their limit: none" in result.stdout


def test_a_source_over_600_lines_fails_naming_it_and_the_limit(tmp_path):
    result = run_check(make_repo(tmp_path, {"core/src/api/c_api.cpp": 601,
                                            "core/src/api/small.hpp": 10}))
    assert result.returncode == 1
    assert "core/src/api/c_api.cpp: 601 lines, over the limit of 600" in result.stderr
    assert "small.hpp" not in result.stderr


def test_a_test_file_over_1000_lines_fails_and_one_of_1000_does_not(tmp_path):
    result = run_check(make_repo(tmp_path, {"tests/core/a/test_a.cpp": 1001,
                                            "tests/core/b/test_b.cpp": 1000}))
    assert result.returncode == 1
    assert "tests/core/a/test_a.cpp: 1001 lines, over the limit of 1000" in result.stderr
    assert "test_b" not in result.stderr


def test_a_revision_is_checked_as_committed(tmp_path):
    root = make_repo(tmp_path, {"bench/long.cpp": 700})
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "long")
    (root / "bench" / "long.cpp").write_text("// short now\n")
    assert run_check(root).returncode == 0  # the working tree
    committed = run_check(root, "HEAD")
    assert committed.returncode == 1
    assert "bench/long.cpp: 700 lines" in committed.stderr
    assert run_check(root, "no-such-revision").returncode == 2


def test_the_repository_is_within_its_limits():
    result = subprocess.run([sys.executable, str(CHECK)], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stderr
