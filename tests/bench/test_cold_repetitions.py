"""BM_ColdSuite and BM_ColdCompile under --benchmark_repetitions: every repetition starts cold.

Run as `python3 test_cold_repetitions.py CUBBY_BENCH` (ctest: bench_cold_repetitions). The tiny
workload is compiled 3 rounds x 3 repetitions per family; each iteration run must have no error
("cold compile hit the cache" was the 2nd and 3rd repetitions' error when a repetition reused the
first one's store folder) and every round must have compiled (no hit).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

BENCH = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("CUBBY_BENCH", "")


class ColdRepetitions(unittest.TestCase):
    def test_every_repetition_of_the_cold_families_starts_cold(self):
        self.assertTrue(BENCH, "pass the cubby_bench binary")
        with tempfile.TemporaryDirectory() as scratch:
            out = os.path.join(scratch, "out.json")
            env = {name: value for name, value in os.environ.items()
                   if not name.startswith("CUBBY_")}
            env["CUBBY_BENCH_DIR"] = os.path.join(scratch, "stores")
            run = subprocess.run(
                [BENCH, "--benchmark_repetitions=3",
                 "--benchmark_filter=^BM_Cold(Suite|Compile)/tiny(/serial|/pch)?/iterations",
                 f"--benchmark_out={out}", "--benchmark_out_format=json"],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
            self.assertEqual(run.returncode, 0, run.stdout)
            with open(out) as file:
                runs = [b for b in json.load(file)["benchmarks"] if b["run_type"] == "iteration"]
        names = sorted({b["run_name"] for b in runs})
        self.assertEqual(names, ["BM_ColdCompile/tiny/iterations:3/real_time",
                                 "BM_ColdSuite/tiny/pch/iterations:3/real_time",
                                 "BM_ColdSuite/tiny/serial/iterations:3/real_time"])
        for name in names:
            repetitions = [b for b in runs if b["run_name"] == name]
            self.assertEqual(len(repetitions), 3, name)
            for b in repetitions:
                self.assertFalse(b.get("error_occurred"), f"{name}: {b.get('error_message')}")
                self.assertEqual(b["iterations"], 3, name)


if __name__ == "__main__":
    unittest.main()
