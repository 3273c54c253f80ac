"""Tests of ci/lib.sh's stage timing (ci/test.sh's table at exit): each stage's CPU minutes are
those its finished child processes used, and the total adds them up."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# A child that uses `seconds` of CPU (not of waiting).
BURN = ('python3 -c "import time\nstart = time.process_time()\n'
        'while time.process_time() - start < {seconds}: pass"')


def stage_table(script: str) -> dict[str, tuple[float, float]]:
    """Runs `script` after sourcing ci/lib.sh, then stages_report: {stage: (wall, CPU) minutes}."""
    done = subprocess.run(["bash", "-c", f"source ci/lib.sh\n{script}\nstages_report"], cwd=REPO,
                          capture_output=True, text=True, check=True)
    rows = re.findall(r"^  (\S.*?)\s+([0-9.]+) min wall\s+([0-9.]+) min CPU$", done.stderr,
                      re.MULTILINE)
    return {name: (float(wall), float(cpu)) for name, wall, cpu in rows}


def test_a_stage_counts_the_cpu_its_children_used_and_the_total_adds_it_up():
    table = stage_table(f'stage busy\n{BURN.format(seconds=4)}\nstage idle\nsleep 0.1')
    # 4 s of CPU is 0.07 min: printed as 0.1 (one decimal); an idle stage as 0.0.
    assert table["busy"][1] >= 0.1, table
    assert table["idle"][1] == 0.0, table
    assert table["total"][1] >= 0.1, table


def test_the_slowest_tests_list_survives_pipefail_with_many_tests(tmp_path):
    # ctest's cost file of a large suite: its sorted list is longer than a pipe holds, so a
    # `sort | head` there ended ci/test.sh with sort's SIGPIPE (exit 141) under pipefail.
    build = tmp_path / "build"
    data = build / "Testing" / "Temporary"
    data.mkdir(parents=True)
    rows = "".join(f"Suite{i:05d}.AVeryLongTestNameToFillThePipeQuickly_{i} 1 {i % 997}.5\n"
                   for i in range(20000))
    (data / "CTestCostData.txt").write_text(rows + "---\n")
    done = subprocess.run(["bash", "-c", f"set -euo pipefail\nsource ci/lib.sh\n"
                           f"ctest_slowest {build} 3\necho after"], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "after\n"
    slowest = re.findall(r"^\s+([0-9.]+)  (\S+)$", done.stderr, re.MULTILINE)
    assert [float(seconds) for seconds, _ in slowest] == [996.5, 996.5, 996.5], done.stderr
    assert "20000 tests" in done.stderr
