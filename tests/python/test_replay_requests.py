"""bench/tools/replay_requests.py over a real libcubby: what the timer plugin records replays
through a fresh Cache, from disk, or from memory after the suite's read-ahead."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import KERNEL, needs_library

pytestmark = needs_library

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "bench" / "tools" / "replay_requests.py"


def replay(requests: Path, *args: str) -> dict:
    done = subprocess.run([sys.executable, str(TOOL), str(requests), "--json",
                           "--collect-seconds", "0", *args],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_replay_records_the_suite_then_hits_disk_and_after_a_read_ahead_memory(tmp_path, env):
    env.setenv("CUBBY_DIR", str(tmp_path / "store"))
    env.setenv("CUBBY_SUITE", "replayed")
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(
        json.dumps({"source": KERNEL.replace("scale", f"scale{n}"),
                    "names": [f"ns::scale{n}<float, 256>"], "options": ["-std=c++17"],
                    "arch": "sm_90", "program_name": f"k{n}.cu"}) + "\n" for n in range(3)))
    assert replay(requests)["tiers"] == {"compiled": 3}  # and recorded as suite "replayed"
    assert replay(requests)["tiers"] == {"disk": 3}
    ahead = replay(requests, "--read-ahead")
    assert ahead["tiers"] == {"memory": 3} and ahead["read_ahead"] == 3, ahead
    assert ahead["requests"] == 3 and ahead["wall_ms"] >= ahead["cpu_ms"] >= 0
