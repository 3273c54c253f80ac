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
