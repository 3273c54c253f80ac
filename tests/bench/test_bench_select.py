"""Tests of bench/tools/bench_select.py: what ci/bench.sh's default and full runs measure."""
import re
import subprocess
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "tools"))
import bench_select  # noqa: E402

# Names as `--benchmark_list_tests` prints them (cubby_bench, then store_bench).
WORKLOADS = ["mdspan50", "mdspan-suite", "tiny"]
CUBBY_BENCH = [n for w in WORKLOADS for n in (
    f"BM_KeyDerive/{w}/real_time", f"BM_ColdCompile/{w}/iterations:3/real_time",
    f"BM_ColdSuite/{w}/serial/iterations:1/real_time", f"BM_ColdSuite/{w}/pch/iterations:1/real_time",
    f"BM_WarmHitMemory/{w}/real_time", f"BM_WarmHitDisk/{w}/real_time", f"BM_WarmHitRemote/{w}/real_time",
    f"BM_FleetFirstRun/{w}/iterations:1/real_time", f"BM_RemoteGet/{w}/raw/real_time",
    f"BM_HitVsLoad/{w}/iterations:1/real_time", f"BM_FleetFirstRunLoaded/{w}/iterations:1/real_time")] + [
    "BM_ColdSuite/mdspan-suite/parallel:2/iterations:1/real_time"]
STORE_BENCH = ["BM_StoreColdOneProcess/iterations:1/manual_time", "BM_StoreColdEightProcesses/8/iterations:1/manual_time",
               "BM_StoreHitDisk/100", "BM_StoreHitDisk/100000", "BM_StoreGc/100000/iterations:3"]
GPU = re.compile(r"^BM_(HitVsLoad|FleetFirstRunLoaded)/")


class DefaultRun(unittest.TestCase):
    def test_without_a_gpu_the_default_run_leaves_out_the_gpu_families_the_long_fill_and_mdspan_suite(self):
        kept, left_out = bench_select.select(CUBBY_BENCH + STORE_BENCH, gpu=False, full=False)
        self.assertFalse([n for n in kept if GPU.search(n)])
        self.assertFalse([n for n in kept if "100000" in n])
        self.assertFalse([n for n in kept if "/mdspan-suite/" in n])
        self.assertIn("BM_ColdCompile/mdspan50/iterations:3/real_time", kept)
        self.assertIn("BM_StoreHitDisk/100", kept)
        self.assertIn("BM_StoreColdEightProcesses/8/iterations:1/manual_time", kept)
        reasons = "\n".join(left_out)
        self.assertIn("needs a GPU", reasons)
        self.assertIn("ci/bench.sh --full", reasons)

    def test_the_full_run_keeps_everything_but_the_gpu_families_without_a_gpu(self):
        kept, _ = bench_select.select(CUBBY_BENCH + STORE_BENCH, gpu=False, full=True)
        self.assertEqual(kept, [n for n in CUBBY_BENCH + STORE_BENCH if not GPU.search(n)])
        self.assertEqual(bench_select.select(CUBBY_BENCH, gpu=True, full=True)[0], CUBBY_BENCH)

    def test_with_a_gpu_the_default_run_keeps_the_gpu_families_of_the_quick_workloads(self):
        kept, _ = bench_select.select(CUBBY_BENCH, gpu=True, full=False)
        self.assertIn("BM_HitVsLoad/mdspan50/iterations:1/real_time", kept)
        self.assertNotIn("BM_HitVsLoad/mdspan-suite/iterations:1/real_time", kept)

    def test_the_filter_matches_exactly_the_selected_names_as_a_posix_extended_expression(self):
        kept, _ = bench_select.select(CUBBY_BENCH + STORE_BENCH, gpu=False, full=False)
        regex = re.compile(bench_select.filter_regex(kept))
        self.assertEqual([n for n in CUBBY_BENCH + STORE_BENCH if regex.search(n)], kept)
        self.assertEqual(bench_select.filter_regex([]), "")

    def test_recovery_without_a_gpu_keeps_the_methods_that_need_no_driver(self):
        regex = re.compile(bench_select.RECOVERY_WITHOUT_GPU)
        self.assertTrue(regex.search("BM_NameRecovery/mdspan/matcher"))
        self.assertTrue(regex.search("BM_NameRecovery/mdspan/baseline"))
        self.assertFalse(regex.search("BM_NameRecovery/mdspan/driver"))
        self.assertFalse(regex.search("BM_NameRecovery/mdspan/load_only"))

    def test_the_command_explains_once_per_group_what_it_left_out(self):
        run = subprocess.run([sys.executable, str(ROOT / "bench" / "tools" / "bench_select.py"), "--gpu", "no",
                              "--regex", "--explain"], input="\n".join(CUBBY_BENCH + STORE_BENCH),
                             capture_output=True, text=True, check=True)
        self.assertEqual(len(run.stdout.strip().splitlines()), 1)
        self.assertEqual(run.stderr.count("needs a GPU"), 2)  # BM_HitVsLoad, BM_FleetFirstRunLoaded
        self.assertEqual(run.stderr.count("\n"), 4)


if __name__ == "__main__":
    unittest.main()
