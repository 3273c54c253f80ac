"""Tests of bench/suite/cupy_suite.py's bookkeeping (no CuPy, no GPU): medians, goals, the CPU
figure beside the wall-time verdict, the sessions' environment."""
import argparse
import math
import os
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "suite"))
import cupy_suite  # noqa: E402


def bench(work: str) -> cupy_suite.Bench:
    args = argparse.Namespace(work=work, deadline=math.inf, xdist=8,
                              out=os.path.join(work, "o.json"), suite=["tests"])
    return cupy_suite.Bench(args)


def run(row: str, seconds: float, cpu: float) -> dict:
    return {"row": row, "run": "warm", "seconds": seconds, "cpu_s": cpu, "exit": 0,
            "tests": {"passed": 3, "failed": 0, "errors": 0}, "counters": {},
            "without_store": 0, "without_counted": True, "require_warm": 0}


class Goals(unittest.TestCase):
    def test_the_warm_goal_is_judged_by_wall_time_and_carries_the_cpu_ratio(self):
        with tempfile.TemporaryDirectory() as work:
            b = bench(work)
            b.runs = [run("cupy-own", 4.0, 3.0), run("cupy-own", 5.0, 3.2),
                      run("cupy-own", 4.4, 3.1), run("cupy-cubby", 4.2, 2.8),
                      run("cupy-cubby", 4.5, 2.9), run("cupy-cubby", 9.0, 2.7)]
            suites = b.suites()
            self.assertEqual(suites["cupy-cubby"]["warm_s"], 4.5)
            self.assertEqual(suites["cupy-cubby"]["warm_cpu_s"], 2.8)
            goal = b.goals(suites)["warm alone: CuPy's own / cubby >= 1"]
            self.assertEqual(goal["status"], "fail")  # 4.4 / 4.5: the wall time decides
            self.assertEqual(goal["ratio"], 0.98)
            self.assertEqual(goal["cpu_ratio"], 1.11)  # 3.1 / 2.8

    def test_runs_without_a_cpu_figure_leave_it_out_of_the_goal(self):
        with tempfile.TemporaryDirectory() as work:
            b = bench(work)
            b.runs = [run("cupy-own", 4.0, 3.0), run("cupy-cubby", 3.0, 2.0)]
            del b.runs[1]["cpu_s"]
            goal = b.goals(b.suites())["warm alone: CuPy's own / cubby >= 1"]
            self.assertEqual(goal["status"], "pass")
            self.assertNotIn("cpu_ratio", goal)

    def test_a_ratio_of_medians_carries_its_bootstrap_interval_and_the_control_row_the_noise(self):
        with tempfile.TemporaryDirectory() as work:
            b = bench(work)
            own = [3.0, 3.4, 4.1, 4.5, 3.2, 4.8, 3.9]
            b.runs = ([run("cupy-own", s, 1.0) for s in own]
                      + [run("cupy-cubby", s + 0.1, 1.0) for s in own]
                      + [run(cupy_suite.CONTROL, s, 1.0) for s in own])
            goals = b.goals(b.suites())
            goal = goals["warm alone: CuPy's own / cubby >= 1"]
            low, high = goal["interval_90"]
            self.assertLess(low, goal["ratio"])  # 3.9 / 4.0 lies inside, and 1 too
            self.assertGreater(high, 1.0)
            self.assertEqual(goal["status"], "fail")  # the verdict stays the medians'
            cupy_suite._interval.cache_clear()  # computed again, not remembered
            self.assertEqual(goal["interval_90"], b.goals(b.suites())[
                "warm alone: CuPy's own / cubby >= 1"]["interval_90"])  # a fixed seed
            control = goals["A/A: cubby control / cubby, warm alone (the noise; no goal)"]
            # 3.9 / 4.0, as round() leaves 0.975
            self.assertEqual((control["ratio"], control["n"], control["status"]), (0.97, 7, "info"))
            self.assertIn("interval_90", control)

    def test_the_speed_ratio_takes_each_runs_machine_speed_out(self):
        with tempfile.TemporaryDirectory() as work:
            b = bench(work)
            fast, slow = [1.0] * 4, [1.5] * 3  # most slow runs fell on cubby's side
            b.runs = [dict(run("cupy-own", 3.0 * s, 1.0), speed_calib_s=0.05 * s)
                      for s in fast + slow]
            b.runs += [dict(run("cupy-cubby", 2.9 * s, 1.0), speed_calib_s=0.05 * s)
                       for s in slow + [1.5] + fast[1:]]
            b.runs[0].pop("speed_calib_s")  # a run without a calibration is left out of it
            goal = b.goals(b.suites())["warm alone: CuPy's own / cubby >= 1"]
            self.assertEqual(goal["status"], "fail")  # the medians: 3.0 / 4.35
            self.assertAlmostEqual(goal["speed_ratio"], 3.0 / 2.9, places=3)
            self.assertEqual(goal["speed_interval_90"], [1.034, 1.034])

    def test_the_paired_ratio_compares_runs_of_one_round(self):
        with tempfile.TemporaryDirectory() as work:
            b = bench(work)
            # The machine slows by half from round 3 on; within a round own is 10% slower.
            speeds = [1.0, 1.0, 1.0, 1.5, 1.5, 1.5]
            for n, s in enumerate(speeds):
                b.runs += [dict(run("cupy-own", 3.3 * s, 1.0), round=n),
                           dict(run("cupy-cubby", 3.0 * s, 1.0), round=n),
                           dict(run(cupy_suite.CONTROL, 3.0 * s, 1.0), round=n)]
            b.runs[-2]["exit"] = "deadline"  # the last round's cubby run: not a pair
            b.runs.append(dict(run("cupy-cubby", 1.0, 1.0)))  # no round: not a pair
            goals = b.goals(b.suites())
            goal = goals["warm alone: CuPy's own / cubby >= 1"]
            self.assertEqual((goal["paired_ratio"], goal["paired_n"]), (1.1, 5))
            self.assertEqual(goal["paired_interval_90"], [1.1, 1.1])
            control = goals["A/A: cubby control / cubby, warm alone (the noise; no goal)"]
            self.assertEqual((control["paired_ratio"], control["paired_n"]), (1.0, 5))
            b.runs = [r for r in b.runs if r.get("round", 0) < 4]  # 4 pairs: no paired figure
            self.assertNotIn("paired_ratio", b.goals(b.suites())[
                "warm alone: CuPy's own / cubby >= 1"])

    def test_every_run_of_a_rotation_round_carries_that_round(self):
        with tempfile.TemporaryDirectory() as work:
            b = bench(work)
            b.args.warm_control, b.args.warm_repeat = True, 2
            for name in ("own-x8-0", "store-x8-0"):
                (Path(work) / name).mkdir()
            rounds = []
            with mock.patch.object(b, "pytest", lambda row, *_a, **_k: rounds.append(b.round)):
                b.alone_on_xdist_stores()
                b.warm_pairs()
            self.assertEqual(rounds, [1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 4, 4])  # the fills: round 2

    def test_under_five_runs_a_side_there_is_no_interval(self):
        self.assertIsNone(cupy_suite.ratio_interval([1.0] * 4, [1.0] * 9))
        self.assertEqual(cupy_suite.ratio_interval([2.0] * 5, [1.0] * 5), [2.0, 2.0])
        self.assertIsNone(cupy_suite.median_interval([1.0] * 4))
        low, high = cupy_suite.median_interval([0.9, 1.0, 1.1, 1.2, 0.8, 1.05, 0.95])
        self.assertTrue(0.8 <= low < 1.0 < high <= 1.2, (low, high))


class Sessions(unittest.TestCase):
    def test_the_control_row_rotates_with_the_other_two_on_the_xdist_rounds_stores(self):
        with tempfile.TemporaryDirectory() as work:
            b = bench(work)
            b.args.warm_control, b.args.warm_repeat, b.args.suite = True, 3, ["tests"]
            for name in ("own-x8-0", "store-x8-0"):
                (Path(work) / name).mkdir()
            order = []
            with mock.patch.object(b, "pytest", lambda row, *_a, **_k: order.append(row)):
                b.alone_on_xdist_stores()
            own, ours, again = "cupy-own", "cupy-cubby", cupy_suite.CONTROL
            self.assertEqual(order, [own, ours, again, ours, again, own, again, own, ours])
            order.clear()
            b.args.warm_control, b.args.warm_repeat = False, 2
            with mock.patch.object(b, "pytest", lambda row, *_a, **_k: order.append(row)):
                b.alone_on_xdist_stores()
            self.assertEqual(order, [own, ours, ours, own])  # without it, two alternate

    def test_a_session_runs_from_compiled_bytecode_and_its_cpu_time_is_recorded(self):
        with tempfile.TemporaryDirectory() as work:
            b = bench(work)
            seen = {}

            class Finished:
                returncode = 0
                pid = 1

                def __init__(self, command, env, **_):
                    seen["env"] = env

                def communicate(self, timeout=None):
                    return "1 passed\n", ""

            times = iter([10.0, 12.5])
            with mock.patch.dict(os.environ, {"PYTHONDONTWRITEBYTECODE": "1"}), \
                    mock.patch.object(cupy_suite.subprocess, "Popen", Finished), \
                    mock.patch.object(cupy_suite, "cpu_seconds", lambda: next(times)):
                record = b.pytest("cupy-own", "warm", ["tests"], Path(work) / "own", None)
            self.assertNotIn("PYTHONDONTWRITEBYTECODE", seen["env"])
            self.assertEqual(record["cpu_s"], 2.5)


if __name__ == "__main__":
    unittest.main()
