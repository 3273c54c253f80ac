"""Tests of bench/tools/bench_report.py and bench/suite/whole_suite.py (standard library only)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "tools"))
import bench_report  # noqa: E402


def bench_json(schema="2", gpu="no: driver missing"):
    def run(name, time, unit, **counters):
        return {"name": name, "run_type": "iteration", "real_time": time, "time_unit": unit, **counters}

    return {
        "context": {"host_name": "box", "num_cpus": 2, "cubby_bench_schema": schema, "arch": "sm_90",
                    "nvrtc": "13.0", "gpu": gpu},
        "benchmarks": [
            run("BM_ColdCompile/mdspan50/iterations:3/real_time", 1600, "ms", cubin_bytes=300000.0,
                name_expressions=50.0, programs=1.0),
            run("BM_WarmHitDisk/mdspan50/real_time", 80, "us", speedup_vs_cold=20000.0),
            run("BM_WarmHitMemory/tiny", 2000, "ns", speedup_vs_cold=9000.0),
            run("BM_WarmHitDisk/tiny/real_time", 7.5, "us", speedup_vs_cold=3000.0),
            run("BM_WarmHitLoaded/mdspan-suite/real_time", 5, "ms", ratio_vs_load_baseline=1.1),
            {"name": "BM_ModuleLoadBaseline/tiny/real_time", "run_type": "iteration", "error_occurred": True,
             "error_message": "skipped: no GPU (no driver)"},
            run("BM_NameRecovery/mdspan50/cubby", 3, "us", accuracy=1.0),
            run("BM_NameRecovery/mdspan50/demangle", 3, "us", accuracy=62.0),
            {"name": "BM_WarmHitDisk/mdspan50_mean", "run_type": "aggregate", "real_time": 1, "time_unit": "us"},
        ],
    }


def fleet_bench_json():
    """cubby_bench's remote families: BM_FleetFirstRun on both workloads, BM_FleetFirstRunLoaded
    (GPU) on one, skipped on the other."""
    def run(name, time, **counters):
        return {"name": name, "run_type": "iteration", "real_time": time, "time_unit": "us", **counters}

    return {
        "context": {"cubby_bench_schema": "2", "gpu": "yes"},
        "benchmarks": [
            run("BM_FleetFirstRun/mdspan50/real_time", 3939, speedup_vs_cold=458.0, ratio_vs_local_warm=37.6,
                served_ratio_vs_local_warm=6.1),
            run("BM_FleetFirstRun/mdspan-suite/real_time", 16189, speedup_vs_cold=95.0, ratio_vs_local_warm=10.6),
            run("BM_FleetFirstRunLoaded/mdspan50/real_time", 5000, speedup_vs_cold=360.0, ratio_vs_local_warm=1.2),
            {"name": "BM_FleetFirstRunLoaded/mdspan-suite/real_time", "run_type": "iteration", "error_occurred": True,
             "error_message": "skipped: no Redis (set CUBBY_REMOTE=redis://HOST:PORT to run it)"},
        ],
    }


def cold_suite_json():
    """cubby_bench's BM_ColdSuite variants of mdspan-suite, out of display order, and one skipped."""
    def run(variant, ms, **counters):
        return {"name": f"BM_ColdSuite/mdspan-suite/{variant}/iterations:1/real_time", "run_type": "iteration",
                "real_time": ms, "time_unit": "ms", "programs": 25.0, **counters}

    return {
        "context": {"cubby_bench_schema": "2"},
        "benchmarks": [
            run("parallel_pch:4", 5000, jobs=4.0, speedup_vs_serial=5.0),
            run("serial", 25000, speedup_vs_serial=1.0),
            run("parallel:2", 12500, jobs=2.0, speedup_vs_serial=1.9),  # the report's own ratio wins
            run("pch", 20000, speedup_vs_serial=1.25),
            run("parallel_pch:2", 10000, jobs=2.0),  # no counter: computed from serial
            {"name": "BM_ColdSuite/mdspan-suite/parallel:4/iterations:1/real_time", "run_type": "iteration",
             "error_occurred": True, "error_message": "cubby warm exited 1: 1 of 25 programs failed (first: boom)"},
            {"name": "BM_ColdSuite/tiny/serial/iterations:3/real_time", "run_type": "iteration", "real_time": 60,
             "time_unit": "ms"},
        ],
    }


def hit_vs_load_json(mdspan50_ratios=(1.05, 1.07, 1.04), suite_ratio=1.06, tiny_ratio=0.97):
    """cubby_bench's interleaved BM_HitVsLoad: mdspan50 with one repetition per ratio given (and
    Google Benchmark's aggregates, which are not runs), mdspan-suite once, tiny once (a fault when
    below 1.0)."""
    def run(workload, ratio, index=0, p10=None, p90=None, **extra):
        counters = {"ratio": ratio, "ratio_p10": p10 or ratio - 0.02, "ratio_p90": p90 or ratio + 0.03,
                    "ratio_min": ratio - 0.1, "ratio_max": ratio + 0.2, "hit_load_us": 2600.0 * ratio,
                    "load_us": 2600.0, "hit_us": 150.0, "pairs": 200.0}
        counters.update(extra)
        return {"name": f"BM_HitVsLoad/{workload}/real_time", "run_type": "iteration", "repetition_index": index,
                "real_time": 5200.0, "time_unit": "us", **counters}

    runs = [run("mdspan50", r, i, p10=r - 0.01 * (i + 1), p90=r + 0.01 * (i + 1), load_us=2500.0 + 100 * i)
            for i, r in enumerate(mdspan50_ratios)]
    runs.append({"name": "BM_HitVsLoad/mdspan50/real_time_median", "run_type": "aggregate",
                 "aggregate_name": "median", "real_time": 1, "time_unit": "us", "ratio": 9.0})
    runs.append(run("mdspan-suite", suite_ratio))
    runs.append(run("tiny", tiny_ratio))
    return {"context": {"cubby_bench_schema": "2", "gpu": "yes"}, "benchmarks": runs}


def suite_timing_json(fleet=True):
    """ci/suite-timing.sh's timing.json, with its fleet simulation or with that part skipped."""
    data = {"scope": "full suite", "cold_s": {"test_mdspan_transform": 45.0, "suite": 45.3},
            "warm_s": {"test_mdspan_transform": 0.4, "suite": 0.7}, "warm_over_removed": 1.05, "warm_runs": 5}
    if fleet:
        data.update({"fleet_s": {"test_mdspan_transform": 0.5}, "fleet_second_s": {"test_mdspan_transform": 0.41},
                     "fleet_over_warm": 1.25, "cold_over_fleet": 90.0, "fleet_remote_hits": 24, "fleet_runs": 5,
                     "fleet_skipped": None, "fleet_problems": []})
    else:
        data.update({key: None for key in ("fleet_s", "fleet_second_s", "fleet_over_warm", "cold_over_fleet",
                                           "fleet_remote_hits", "fleet_runs", "fleet_problems")})
        data["fleet_skipped"] = "no redis-server on PATH (install redis-server, or set CUBBY_TEST_REDIS_SERVER)"
    return data


def goal_status(record, prefix):
    """{goal text: status} of the goals whose text starts with `prefix`."""
    return {g["goal"]: g["status"] for g in bench_report.evaluate_goals(record) if g["goal"].startswith(prefix)}


class Workdir(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cubby-test-bench-report-"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name, data):
        path = self.dir / name
        path.write_text(data if isinstance(data, str) else json.dumps(data))
        return path

    def report(self, *args):
        return subprocess.run([sys.executable, str(ROOT / "bench/tools/bench_report.py"), "--commit", "abc",
                               "--gpu-name", "", "--out", str(self.dir / "out"), *map(str, args)],
                              capture_output=True, text=True)


class ReadBench(Workdir):
    def record(self, data, source="cubby_bench"):
        record = {"machine": {}, "workloads": {}, "recovery": {}, "suite": {}, "skipped": {}}
        used = bench_report.read_bench(data, record, source)
        return record, used

    def test_reads_families_units_and_counters(self):
        record, used = self.record(bench_json())
        self.assertEqual(used, 7)
        self.assertAlmostEqual(record["workloads"]["mdspan50"]["cold_ms"], 1600)
        self.assertAlmostEqual(record["workloads"]["mdspan50"]["speedup_disk"], 20000)
        self.assertAlmostEqual(record["workloads"]["tiny"]["warm_memory_us"], 2.0)  # ns -> us
        self.assertAlmostEqual(record["workloads"]["mdspan-suite"]["warm_loaded_us"], 5000)
        self.assertAlmostEqual(record["workloads"]["mdspan-suite"]["ratio_vs_load_baseline"], 1.1)
        self.assertEqual(record["workloads"]["mdspan50"]["programs"], 1.0)
        self.assertFalse(record["machine"]["gpu"])

    def test_skipped_benchmarks_keep_their_reason(self):
        record, _ = self.record(bench_json())
        self.assertEqual(record["skipped"]["BM_ModuleLoadBaseline/tiny"], "skipped: no GPU (no driver)")

    def test_name_recovery_accuracy_accepts_fraction_and_percent(self):
        record, _ = self.record(bench_json())
        self.assertEqual(record["recovery"]["mdspan50"], {"cubby": 1.0, "demangle": 0.62})

    def test_aggregates_are_not_read_as_runs(self):
        record, _ = self.record(bench_json())
        self.assertAlmostEqual(record["workloads"]["mdspan50"]["warm_disk_us"], 80)

    def test_other_version_warns_and_reads_what_it_knows(self):
        data = bench_json(schema="1")
        with _capture_stderr() as err:
            record, used = self.record(data)
        self.assertIn("another version of cubby_bench", err.getvalue())
        self.assertEqual(used, 7)

    def test_not_google_benchmark_json_is_skipped(self):
        with _capture_stderr() as err:
            record, used = self.record({"hello": 1})
        self.assertEqual(used, 0)
        self.assertIn("no 'benchmarks' list", err.getvalue())
        self.assertEqual(record["workloads"], {})

    def test_reads_fleet_families_and_their_counters(self):
        record, used = self.record(fleet_bench_json())
        self.assertEqual(used, 3)
        mdspan50 = record["workloads"]["mdspan50"]
        self.assertAlmostEqual(mdspan50["fleet_first_run_us"], 3939)
        self.assertAlmostEqual(mdspan50["speedup_fleet_first_run"], 458)
        self.assertAlmostEqual(mdspan50["fleet_ratio_vs_local_warm"], 37.6)
        self.assertAlmostEqual(mdspan50["fleet_served_ratio_vs_local_warm"], 6.1)
        self.assertAlmostEqual(mdspan50["fleet_loaded_us"], 5000)
        self.assertAlmostEqual(mdspan50["speedup_fleet_loaded"], 360)
        self.assertAlmostEqual(mdspan50["fleet_loaded_ratio_vs_local_warm"], 1.2)
        self.assertNotIn("fleet_loaded_us", record["workloads"]["mdspan-suite"])
        self.assertIn("no Redis", record["skipped"]["BM_FleetFirstRunLoaded/mdspan-suite"])

    def test_reads_cold_suite_variants_in_order_with_speedups_over_serial(self):
        record, used = self.record(cold_suite_json())
        bench_report.finish_cold_suite(record)
        self.assertEqual(used, 6)
        rows = record["workloads"]["mdspan-suite"]["cold_suite"]
        self.assertEqual(list(rows), ["serial", "pch", "parallel:2", "parallel_pch:2", "parallel_pch:4"])
        self.assertEqual(rows["parallel:2"], {"ms": 12500, "jobs": 2.0, "speedup_vs_serial": 2.0})
        self.assertEqual(rows["parallel_pch:2"], {"ms": 10000, "jobs": 2.0, "speedup_vs_serial": 2.5})
        self.assertEqual(rows["pch"]["speedup_vs_serial"], 1.25)
        self.assertEqual(rows["serial"]["speedup_vs_serial"], 1.0)
        self.assertNotIn("jobs", rows["serial"])
        self.assertEqual(record["workloads"]["mdspan-suite"]["programs"], 25.0)
        self.assertIn("1 of 25 programs failed", record["skipped"]["BM_ColdSuite/mdspan-suite/parallel:4"])
        self.assertEqual(record["workloads"]["tiny"]["cold_suite"], {"serial": {"ms": 60, "speedup_vs_serial": 1.0}})
        self.assertNotIn("cold_ms", record["workloads"]["mdspan-suite"])  # not BM_ColdCompile

    def test_cold_suite_without_serial_keeps_the_benchmark_s_counter(self):
        data = cold_suite_json()
        data["benchmarks"] = [b for b in data["benchmarks"] if "/serial/" not in b["name"]]
        record, _ = self.record(data)
        bench_report.finish_cold_suite(record)
        rows = record["workloads"]["mdspan-suite"]["cold_suite"]
        self.assertEqual(rows["parallel:2"]["speedup_vs_serial"], 1.9)
        self.assertNotIn("speedup_vs_serial", rows["parallel_pch:2"])

    def test_split_name_keeps_variants_and_drops_google_benchmark_suffixes(self):
        self.assertEqual(bench_report.split_name("BM_ColdSuite/mdspan-suite/parallel_pch:16/iterations:1/real_time"),
                         ("BM_ColdSuite", "mdspan-suite", "parallel_pch:16"))
        self.assertEqual(bench_report.split_name("BM_WarmHitDisk/mdspan50/repeats:3/threads:2/manual_time"),
                         ("BM_WarmHitDisk", "mdspan50", ""))
        self.assertEqual(bench_report.split_name("BM_ColdCompile/mdspan-suite/iterations:1/min_time:0.5"),
                         ("BM_ColdCompile", "mdspan-suite", ""))

    def test_malformed_entries_are_ignored(self):
        data = {"context": {"cubby_bench_schema": "2"},
                "benchmarks": [7, {"name": "BM_WarmHitDisk/x", "real_time": "fast", "time_unit": "us"},
                               {"name": "BM_WarmHitDisk/x", "real_time": 1, "time_unit": "fortnights"}]}
        with _capture_stderr():
            record, used = self.record(data)
        self.assertEqual(used, 0)


class Goals(unittest.TestCase):
    def test_goals_pass_fail_and_not_measured(self):
        record = {"workloads": {"mdspan50": {"speedup_disk": 999.0, "ratio_vs_load_baseline": 1.1},
                                "tiny": {"warm_disk_us": 7.0}},
                  "suite": {"gtest": {"ratio": 25.0}}}
        status = {g["goal"].split(" ")[0] + str(g["target"]): g["status"] for g in bench_report.evaluate_goals(record)}
        self.assertEqual(status["mdspan501000"], "fail")
        self.assertEqual(status["tiny20"], "pass")
        self.assertEqual(status["whole20"], "pass")
        # A ratio of two separately measured families (BM_WarmHitLoaded / BM_ModuleLoadBaseline) is no goal;
        # without BM_HitVsLoad (no GPU) the hit-path goals are not measured.
        self.assertNotIn("mdspan501.15", status)
        self.assertEqual((status["mdspan501.08"], status["mdspan-suite1.08"], status["tiny1.2"]), ("n/a",) * 3)

    def test_fleet_goals_from_cubby_bench(self):
        record = {"workloads": {}, "recovery": {}, "suite": {}, "skipped": {}, "machine": {}}
        bench_report.read_bench(fleet_bench_json(), record, "cubby_bench")
        status = goal_status(record, "mdspan")
        self.assertEqual(status["mdspan50 BM_FleetFirstRun (fresh store served by Redis) >= 100x faster than cold"],
                         "pass")
        self.assertEqual(status["mdspan-suite BM_FleetFirstRun (fresh store served by Redis) >= 100x faster than "
                                "cold"], "fail")
        self.assertEqual(status["mdspan50 BM_FleetFirstRunLoaded <= 1.5x BM_WarmHitLoaded (GPU, Redis)"], "pass")
        self.assertEqual(status["mdspan-suite BM_FleetFirstRunLoaded <= 1.5x BM_WarmHitLoaded (GPU, Redis)"], "n/a")

    def test_fleet_goals_from_the_example_suite(self):
        suite = {"cold_s": 45.3, "warm_s": 0.7, "ratio": 64.7, "fleet_over_warm": 1.25, "cold_over_fleet": 90.0}
        status = goal_status({"workloads": {}, "suite": {"gtest-examples": suite}}, "example suite")
        self.assertEqual(status["example suite: fleet first run (fresh store served by Redis) <= 1.5x local warm "
                                "run"], "pass")
        self.assertEqual(status["example suite: fleet first run (fresh store served by Redis) >= 100x faster than "
                                "cold"], "fail")
        status = goal_status({"workloads": {}, "suite": {}}, "example suite")
        self.assertEqual(set(status.values()), {"n/a"})
        self.assertEqual(len(status), 2)


class HitVsLoad(Workdir):
    def record(self, data):
        record = {"machine": {}, "workloads": {}, "recovery": {}, "suite": {}, "skipped": {}}
        self.assertGreater(bench_report.read_bench(data, record, "cubby_bench"), 0)
        return record

    def test_repetitions_combine_into_the_median_and_the_widest_spread(self):
        w = self.record(hit_vs_load_json())["workloads"]["mdspan50"]
        self.assertAlmostEqual(w["hit_load_ratio"], 1.05)  # median of 1.05, 1.07, 1.04 (not the aggregate's 9)
        self.assertAlmostEqual(w["hit_load_ratio_p10"], 1.04 - 0.03)  # the lowest p10 of the repetitions
        self.assertAlmostEqual(w["hit_load_ratio_p90"], 1.07 + 0.02)  # the highest p90
        self.assertAlmostEqual(w["hit_load_ratio_min"], 0.94)
        self.assertAlmostEqual(w["hit_load_ratio_max"], 1.27)
        self.assertAlmostEqual(w["bare_load_us"], 2600.0)  # median of 2500, 2600, 2700
        self.assertAlmostEqual(w["hit_only_us"], 150.0)
        self.assertEqual(w["hit_load_pairs"], 600)
        self.assertEqual(w["hit_load_repetitions"], 3)
        self.assertEqual(self.record(hit_vs_load_json())["workloads"]["mdspan-suite"]["hit_load_repetitions"], 1)

    def test_goals_pass_fail_and_fault(self):
        record = self.record(hit_vs_load_json(mdspan50_ratios=(1.09, 1.10, 1.11), suite_ratio=1.07, tiny_ratio=0.97))
        goals = {g["goal"].split(" ")[0]: g for g in bench_report.evaluate_goals(record)
                 if "BM_HitVsLoad" in g["goal"]}
        self.assertEqual({n: g["status"] for n, g in goals.items()},
                         {"mdspan50": "fail", "mdspan-suite": "pass", "tiny": "fault"})
        self.assertEqual((goals["mdspan50"]["target"], goals["tiny"]["target"]), (1.08, 1.20))
        self.assertAlmostEqual(goals["mdspan50"]["value"], 1.10)
        self.assertAlmostEqual(goals["mdspan50"]["spread"][0], 1.08)
        self.assertAlmostEqual(goals["mdspan50"]["spread"][1], 1.14)
        self.assertEqual(goals["tiny"]["floor"], 1.0)
        record = self.record(hit_vs_load_json(tiny_ratio=1.19))
        self.assertEqual(goal_status(record, "tiny hit + load")["tiny hit + load <= 1.20x bare load (BM_HitVsLoad, "
                                                                   "interleaved median; GPU)"], "pass")

    def test_no_gpu_skips_the_family_and_its_goals(self):
        data = {"context": {"cubby_bench_schema": "2", "gpu": "no: driver missing"}, "benchmarks": [
            {"name": f"BM_HitVsLoad/{w}/real_time", "run_type": "iteration", "error_occurred": True,
             "error_message": "skipped: no GPU (no driver)"} for w in ("tiny", "mdspan50")]}
        record = {"machine": {}, "workloads": {}, "recovery": {}, "suite": {}, "skipped": {}}
        bench_report.read_bench(data, record, "cubby_bench")
        self.assertEqual(record["skipped"]["BM_HitVsLoad/tiny"], "skipped: no GPU (no driver)")
        self.assertEqual({g["status"] for g in bench_report.evaluate_goals(record) if "BM_HitVsLoad" in g["goal"]},
                         {"n/a"})

    def test_report_shows_median_spread_and_fault(self):
        bench = self.write("b.json", hit_vs_load_json())
        done = self.report("--bench", bench)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("mdspan50: 1.050x (p10 1.010, p90 1.090)", done.stdout)
        self.assertIn("3 repetition(s)", done.stdout)
        self.assertRegex(done.stdout, r"tiny: 0\.970x .*MEASUREMENT FAULT")
        self.assertRegex(done.stdout, r"\[fault\] tiny hit \+ load <= 1\.20x .*a measurement fault, not a result")
        self.assertIn("[pass] mdspan50 hit + load <= 1.08x", done.stdout)
        self.assertIn("p10-p90 1.01-1.09", done.stdout)
        results = json.loads((self.dir / "out/results.json").read_text())
        self.assertAlmostEqual(results["workloads"]["mdspan50"]["hit_load_ratio"], 1.05)
        smaller = json.loads((self.dir / "out/github-action-benchmark/smaller.json").read_text())
        self.assertIn("mdspan50: hit+load / bare load (interleaved median)", [i["name"] for i in smaller])

    def test_old_separate_ratio_is_marked_and_no_goal(self):
        bench = self.write("b.json", bench_json())  # BM_WarmHitLoaded with ratio_vs_load_baseline, no BM_HitVsLoad
        done = self.report("--bench", bench)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("1.10x *", done.stdout)
        self.assertIn("measured apart: no goal", done.stdout)
        self.assertNotIn("BM_WarmHitLoaded <= 1.15x", done.stdout)


class Machine(Workdir):
    def test_cpu_model_and_label_are_recorded(self):
        bench = self.write("b.json", bench_json())
        done = subprocess.run([sys.executable, str(ROOT / "bench/tools/bench_report.py"), "--commit", "abc",
                               "--gpu-name", "", "--out", str(self.dir / "out"), "--bench", str(bench)],
                              capture_output=True, text=True, env={**os.environ, "CUBBY_BENCH_MACHINE": "lab box"})
        self.assertEqual(done.returncode, 0, done.stderr)
        machine = json.loads((self.dir / "out/results.json").read_text())["machine"]
        self.assertEqual(machine["label"], "lab box")
        self.assertEqual(machine["cpu_model"], bench_report.cpu_model())
        self.assertIn("cpu_model", machine)
        done = self.report("--bench", bench)
        self.assertNotIn("label", json.loads((self.dir / "out/results.json").read_text())["machine"])

    def test_load_average_at_the_start_and_the_end_is_recorded(self):
        data = bench_json()
        data["context"]["load_avg"] = [6.45, 4.07, 2.36]  # Google Benchmark's, when cubby_bench started
        done = self.report("--bench", self.write("b.json", data))
        self.assertEqual(done.returncode, 0, done.stderr)
        load = json.loads((self.dir / "out/results.json").read_text())["load"]
        self.assertEqual(load["start"], [6.45, 4.07, 2.36])
        self.assertEqual(load["end"], bench_report.proc_loadavg())
        self.assertEqual(len(load["end"]), 3)
        self.assertIn("load average (1 min) at the start 6.45, at the end", done.stdout)

    def test_missing_or_malformed_load_average_is_left_out(self):
        for value in (None, [1, 2], ["x", 1, 2], [-1, 0, 0], "1 2 3"):
            data = bench_json()
            if value is not None:
                data["context"]["load_avg"] = value
            record = {"machine": {}, "workloads": {}, "recovery": {}, "suite": {}, "skipped": {}}
            bench_report.read_bench(data, record, "cubby_bench")
            self.assertNotIn("load", record, value)
        self.assertIsNone(bench_report.proc_loadavg(self.write("loadavg", "")))
        self.assertIsNone(bench_report.proc_loadavg(self.dir / "none"))
        self.assertEqual(bench_report.proc_loadavg(self.write("loadavg", "0.50 0.25 0.10 1/200 42\n")),
                         [0.5, 0.25, 0.1])


class Command(Workdir):
    def test_writes_results_history_and_github_action_benchmark(self):
        bench = self.write("b.json", bench_json())
        history = self.dir / "h.jsonl"
        done = self.report("--bench", bench, "--history", history)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("mdspan50", done.stdout)
        self.assertIn("no history", done.stderr)
        results = json.loads((self.dir / "out/results.json").read_text())
        self.assertEqual(results["schema"], 1)
        self.assertEqual(results["commit"], "abc")
        lines = history.read_text().splitlines()
        self.assertEqual(len(lines), 1)
        self.assertEqual(json.loads(lines[0])["workloads"], results["workloads"])
        smaller = json.loads((self.dir / "out/github-action-benchmark/smaller.json").read_text())
        bigger = json.loads((self.dir / "out/github-action-benchmark/bigger.json").read_text())
        for item in smaller + bigger:
            self.assertEqual(set(item), {"name", "unit", "value", "extra"})
        self.assertIn("mdspan50: warm hit (disk)", [i["name"] for i in smaller])
        self.assertIn("name recovery mdspan50: demangle", [i["name"] for i in bigger])

    def test_corrupt_history_is_kept_and_appended_to(self):
        bench = self.write("b.json", bench_json())
        history = self.write("h.jsonl", "{not json\n[1, 2]\n")
        done = self.report("--bench", bench, "--history", history)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("h.jsonl:1: not a JSON object", done.stderr)
        lines = history.read_text().splitlines()
        self.assertEqual(lines[:2], ["{not json", "[1, 2]"])
        self.assertEqual(json.loads(lines[2])["commit"], "abc")

    def test_corrupt_bench_json_says_what_to_do_and_writes_nothing(self):
        bench = self.write("b.json", "{truncated")
        done = self.report("--bench", bench)
        self.assertEqual(done.returncode, 2)
        self.assertIn("not valid JSON", done.stderr)
        self.assertIn("re-run", done.stderr)
        self.assertFalse((self.dir / "out/results.json").exists())

    def test_missing_bench_json_with_a_suite_still_reports(self):
        suite = self.write("s.json", {"schema": 1, "suites": {"gtest": {"cold_s": 60.0, "warm_s": 2.0},
                                                               "pytest": {"skipped": "no pytest suite"}}})
        done = self.report("--bench", self.dir / "absent.json", "--suite", suite)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("no cubby_bench JSON", done.stderr)
        self.assertIn("1st run (cold)", done.stdout)
        self.assertIn("30.00x", done.stdout)
        results = json.loads((self.dir / "out/results.json").read_text())
        self.assertEqual(results["skipped"]["suite/pytest"], "no pytest suite")


class ColdSuite(Workdir):
    def test_table_and_github_action_benchmark_show_the_variants(self):
        done = self.report("--bench", self.write("b.json", cold_suite_json()))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("cold suite (BM_ColdSuite", done.stdout)
        self.assertIn("  mdspan-suite: serial 25 s; pch 20 s = 1.25x; parallel:2 12.5 s = 2.00x (2 jobs); "
                      "parallel_pch:2 10 s = 2.50x (2 jobs); parallel_pch:4 5 s = 5.00x (4 jobs)", done.stdout)
        results = json.loads((self.dir / "out/results.json").read_text())
        self.assertEqual(results["workloads"]["mdspan-suite"]["cold_suite"]["parallel_pch:2"]["speedup_vs_serial"], 2.5)
        smaller = json.loads((self.dir / "out/github-action-benchmark/smaller.json").read_text())
        bigger = json.loads((self.dir / "out/github-action-benchmark/bigger.json").read_text())
        self.assertIn({"mdspan-suite: cold suite, parallel:2": 12500}, [{i["name"]: i["value"]} for i in smaller])
        self.assertIn({"mdspan-suite: cold suite, parallel_pch:2 vs serial": 2.5},
                      [{i["name"]: i["value"]} for i in bigger])
        self.assertNotIn("mdspan-suite: cold suite, serial vs serial", [i["name"] for i in bigger])


class SuiteEdit(Workdir):
    def test_reads_the_run_after_a_header_edit(self):
        suite = self.write("s.json", {"schema": 1, "suites": {
            "pytest": {"cold_s": 60.0, "warm_s": 2.0, "edit_s": 20.0, "edit_ratio": 3.0, "edit_serial_s": 58.0},
            "gtest": {"cold_s": 40.0, "warm_s": 1.0}}})  # an older file: no edit run
        done = self.report("--suite", suite)
        self.assertEqual(done.returncode, 0, done.stderr)
        results = json.loads((self.dir / "out/results.json").read_text())
        self.assertEqual(results["suite"]["pytest"], {"cold_s": 60.0, "warm_s": 2.0, "ratio": 30.0, "edit_s": 20.0,
                                                      "edit_ratio": 3.0, "edit_serial_s": 58.0})
        self.assertEqual(results["suite"]["gtest"], {"cold_s": 40.0, "warm_s": 1.0, "ratio": 40.0})
        self.assertIn("after header edit", done.stdout)
        self.assertRegex(done.stdout, r"pytest +60 s +2 s +30\.00x +20 s +3\.00x")
        self.assertRegex(done.stdout, r"gtest +40 s +1 s +40\.00x +- +-")
        bigger = json.loads((self.dir / "out/github-action-benchmark/bigger.json").read_text())
        self.assertIn({"suite pytest: cold / after a header edit": 3.0}, [{i["name"]: i["value"]} for i in bigger])


class SuiteStats(Workdir):
    def test_reads_each_run_s_hits_misses_and_time_saved(self):
        suite = self.write("s.json", {"schema": 1, "suites": {"gtest": {
            "cold_s": 60.0, "warm_s": 2.0, "cold_hits": 0, "cold_misses": 24, "warm_hits": 24, "warm_misses": 0,
            "warm_compile_saved_s": 55.5, "edit_s": 20.0, "edit_hits": 18, "edit_misses": 6, "other": 1}}})
        done = self.report("--suite", suite)
        self.assertEqual(done.returncode, 0, done.stderr)
        gtest = json.loads((self.dir / "out/results.json").read_text())["suite"]["gtest"]
        self.assertEqual((gtest["warm_hits"], gtest["warm_misses"], gtest["edit_hits"], gtest["edit_misses"]),
                         (24, 0, 18, 6))
        self.assertEqual(gtest["warm_compile_saved_s"], 55.5)
        self.assertNotIn("other", gtest)
        self.assertIn("gtest lookups: cold 0 hits / 24 misses = 0%; warm 24 hits / 0 misses = 100%, 55.5 s compile "
                      "saved; edit 18 hits / 6 misses = 75%", done.stdout)


class SuiteTiming(Workdir):
    def test_reads_ci_suite_timing_json(self):
        timing = self.write("t.json", {"scope": "full suite", "cold_s": {"suite": 68.0}, "warm_s": {"suite": 3.4}})
        done = self.report("--suite-timing", timing)
        self.assertEqual(done.returncode, 0, done.stderr)
        suite = json.loads((self.dir / "out/results.json").read_text())["suite"]["gtest-examples"]
        self.assertAlmostEqual(suite["ratio"], 20.0)
        self.assertEqual(suite["note"], "full suite")

    def test_reads_the_fleet_simulation(self):
        timing = self.write("t.json", suite_timing_json())
        bench = self.write("b.json", fleet_bench_json())
        done = self.report("--suite-timing", timing, "--bench", bench)
        self.assertEqual(done.returncode, 0, done.stderr)
        results = json.loads((self.dir / "out/results.json").read_text())
        suite = results["suite"]["gtest-examples"]
        self.assertEqual(suite["fleet_s"], 0.5)
        self.assertEqual(suite["fleet_second_s"], 0.41)
        self.assertEqual(suite["fleet_over_warm"], 1.25)
        self.assertEqual(suite["cold_over_fleet"], 90.0)
        self.assertEqual((suite["fleet_remote_hits"], suite["fleet_runs"]), (24, 5))
        self.assertAlmostEqual(suite["ratio"], 45.3 / 0.7)
        goals = {g["goal"]: g for g in results["goals"]}
        over_warm = goals["example suite: fleet first run (fresh store served by Redis) <= 1.5x local warm run"]
        self.assertEqual((over_warm["value"], over_warm["status"]), (1.25, "pass"))
        # The text says the same as results.json.
        self.assertIn("fleet first run (fresh store served by Redis)", done.stdout)
        self.assertIn("suite gtest-examples (test_mdspan_transform): 500 ms = 1.25x the local warm run, "
                      "90.00x faster than cold; second run 410 ms", done.stdout)
        self.assertIn("mdspan50 BM_FleetFirstRunLoaded: 5 ms = 1.20x the local warm run + loads", done.stdout)
        self.assertIn("[pass] example suite: fleet first run (fresh store served by Redis) <= 1.5x local warm run "
                      "(measured 1.25, target 1.5)", done.stdout)
        self.assertIn("[fail] example suite: fleet first run (fresh store served by Redis) >= 100x faster than cold "
                      "(measured 90, target 100)", done.stdout)
        smaller = json.loads((self.dir / "out/github-action-benchmark/smaller.json").read_text())
        bigger = json.loads((self.dir / "out/github-action-benchmark/bigger.json").read_text())
        self.assertIn({"suite gtest-examples: fleet first run / local warm": 1.25},
                      [{i["name"]: i["value"]} for i in smaller])
        self.assertIn({"suite gtest-examples: cold / fleet first run": 90.0}, [{i["name"]: i["value"]} for i in bigger])
        self.assertIn({"mdspan50: speedup, fleet first run vs cold": 458.0}, [{i["name"]: i["value"]} for i in bigger])

    def test_skipped_fleet_simulation_is_recorded_and_its_goals_not_measured(self):
        timing = self.write("t.json", suite_timing_json(fleet=False))
        done = self.report("--suite-timing", timing)
        self.assertEqual(done.returncode, 0, done.stderr)
        results = json.loads((self.dir / "out/results.json").read_text())
        self.assertNotIn("fleet_s", results["suite"]["gtest-examples"])
        self.assertIn("no redis-server", results["skipped"]["suite/gtest-examples/fleet"])
        statuses = {g["status"] for g in results["goals"] if g["goal"].startswith("example suite")}
        self.assertEqual(statuses, {"n/a"})
        self.assertNotIn("\nfleet first run (fresh store served by Redis)\n", done.stdout)  # no section

    def test_failed_fleet_checks_are_reported(self):
        data = suite_timing_json()
        data["fleet_problems"] = ["fleet_second.2: that store's second run must be 24 disk hits"]
        done = self.report("--suite-timing", self.write("t.json", data))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("1 check(s) of what served its fleet runs failed", done.stderr)

    def test_suite_timing_without_numbers_is_skipped(self):
        timing = self.write("t.json", {"cold_s": {"suite": "slow"}})
        done = self.report("--suite-timing", timing)
        self.assertEqual(done.returncode, 2)
        self.assertIn("re-run ci/suite-timing.sh", done.stderr)


class WholeSuite(Workdir):
    def run_suites(self, *args):
        return subprocess.run([sys.executable, str(ROOT / "bench/suite/whole_suite.py"), "--out",
                               str(self.dir / "suite.json"), "--store", str(self.dir / "stores"), *args],
                              capture_output=True, text=True)

    def test_cold_then_warm_on_one_store(self):
        # The first run finds an empty store and fills it; the second finds it filled.
        command = 'if [ -e "$CUBBY_DIR/filled" ]; then echo warm; else sleep 0.3; touch "$CUBBY_DIR/filled"; fi'
        done = self.run_suites("--suite", f"demo={command}", "--skip", "other=not here")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("1st run (cold)", done.stdout)
        suites = json.loads((self.dir / "suite.json").read_text())["suites"]
        self.assertGreater(suites["demo"]["cold_s"], suites["demo"]["warm_s"])
        self.assertGreater(suites["demo"]["ratio"], 1)
        self.assertEqual(suites["other"], {"skipped": "not here"})
        self.assertIn("warm", (self.dir / "suite-logs/demo-warm.log").read_text())

    def test_run_after_a_header_edit_keeps_the_manifest_and_drops_the_entries(self):
        # A suite stand-in: a cold run compiles (0.4 s), records a manifest and an entry; with the
        # entries gone and the manifest kept, "prefetch" makes it cheaper (0.1 s) unless
        # CUBBY_PREFETCH=0.
        command = ('mkdir -p "$CUBBY_DIR/manifests" "$CUBBY_DIR/entries"; echo "prefetch=${CUBBY_PREFETCH:-1}"; '
                   'if [ -e "$CUBBY_DIR/entries/e" ]; then echo warm; '
                   'elif [ -e "$CUBBY_DIR/manifests/demo.manifest" ] && [ "${CUBBY_PREFETCH:-1}" != 0 ]; '
                   'then sleep 0.1; else sleep 0.4; fi; '
                   'touch "$CUBBY_DIR/entries/e" "$CUBBY_DIR/manifests/demo.manifest"')
        done = self.run_suites("--suite", f"demo={command}", "--edit-serial")
        self.assertEqual(done.returncode, 0, done.stderr)
        demo = json.loads((self.dir / "suite.json").read_text())["suites"]["demo"]
        self.assertEqual((demo["edit_exit"], demo["edit_serial_exit"]), (0, 0))
        self.assertLess(demo["warm_s"], demo["edit_s"])
        self.assertLess(demo["edit_s"], demo["cold_s"])
        self.assertGreater(demo["edit_serial_s"], demo["edit_s"])
        self.assertAlmostEqual(demo["edit_ratio"], demo["cold_s"] / demo["edit_s"])
        self.assertIn("prefetch=1", (self.dir / "suite-logs/demo-edit.log").read_text())
        self.assertIn("prefetch=0", (self.dir / "suite-logs/demo-edit-serial.log").read_text())
        self.assertIn("after edit", done.stdout)
        self.assertIn("edit, no prefetch", done.stdout)

    def test_no_edit_leaves_the_third_run_out(self):
        done = self.run_suites("--suite", "demo=true", "--no-edit")
        self.assertEqual(done.returncode, 0, done.stderr)
        demo = json.loads((self.dir / "suite.json").read_text())["suites"]["demo"]
        self.assertEqual(set(demo), {"cold_s", "warm_s", "cold_exit", "warm_exit", "ratio"})
        self.assertNotIn("after edit", done.stdout)

    def test_failed_edit_run_gets_no_edit_ratio(self):
        command = 'if [ -e "$CUBBY_DIR/ran-twice" ]; then exit 4; fi; [ -e "$CUBBY_DIR/ran" ] && touch "$CUBBY_DIR/ran-twice"; touch "$CUBBY_DIR/ran"'
        done = self.run_suites("--suite", f"demo={command}")
        self.assertEqual(done.returncode, 1)
        demo = json.loads((self.dir / "suite.json").read_text())["suites"]["demo"]
        self.assertEqual(demo["edit_exit"], 4)
        self.assertIn("ratio", demo)
        self.assertNotIn("edit_ratio", demo)
        self.assertIn("no ratio", demo["note"])

    def test_cubby_stats_give_each_run_its_hits_misses_and_time_saved(self):
        # A stand-in `cubby stats --dir DIR --json`: the counters the suite stand-in wrote to DIR/counters.
        cli = self.dir / "cubby"
        cli.write_text('#!/usr/bin/env bash\n[ "$1 $2 $4" = "stats --dir --json" ] || exit 2\n'
                       'h=0; m=0; [ -f "$3/counters" ] && read -r h m <"$3/counters"\n'
                       'echo "{\\"hits_disk\\": $h, \\"hits_memory\\": 1, \\"misses\\": $m, '
                       '\\"compile_ms_saved\\": $((h * 500))}"\n')
        cli.chmod(0o755)
        # Cold: 4 misses; warm: 4 hits; after the edit (entries gone): 3 hits (prefetched), 1 miss.
        command = ('read -r h m <"$CUBBY_DIR/counters" 2>/dev/null || { h=0; m=0; }; '
                   'if [ ! -e "$CUBBY_DIR/entries/e" ] && [ "$h" = 0 ]; then m=$((m + 4)); '
                   'elif [ -e "$CUBBY_DIR/entries/e" ]; then h=$((h + 4)); else h=$((h + 3)); m=$((m + 1)); fi; '
                   'mkdir -p "$CUBBY_DIR/entries"; touch "$CUBBY_DIR/entries/e"; echo "$h $m" >"$CUBBY_DIR/counters"')
        done = self.run_suites("--suite", f"demo={command}", "--cubby", str(cli))
        self.assertEqual(done.returncode, 0, done.stderr)
        demo = json.loads((self.dir / "suite.json").read_text())["suites"]["demo"]
        self.assertEqual([demo[f"{run}_{k}"] for run in ("cold", "warm", "edit") for k in ("hits", "misses")],
                         [0, 4, 4, 0, 3, 1])
        self.assertEqual((demo["warm_compile_saved_s"], demo["edit_compile_saved_s"]), (2.0, 1.5))

    def test_failing_cubby_stats_leave_the_fields_out(self):
        done = self.run_suites("--suite", "demo=true", "--no-edit", "--cubby", "/bin/false")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("stats --json` failed", done.stderr)
        demo = json.loads((self.dir / "suite.json").read_text())["suites"]["demo"]
        self.assertEqual(set(demo), {"cold_s", "warm_s", "cold_exit", "warm_exit", "ratio"})

    def test_failing_suite_gets_no_ratio_and_others_still_run(self):
        done = self.run_suites("--suite", "bad=echo boom; exit 3", "--suite", "good=true")
        self.assertEqual(done.returncode, 1)
        self.assertIn("boom", done.stderr)
        suites = json.loads((self.dir / "suite.json").read_text())["suites"]
        self.assertNotIn("ratio", suites["bad"])
        self.assertEqual(suites["bad"]["cold_exit"], 3)
        self.assertIn("ratio", suites["good"])


STUB_CUBBY_BENCH = r"""#!/usr/bin/env bash
# A stand-in for cubby_bench: writes one run to --benchmark_out and notes the remote it was given
# and whether that Redis answered, and the filter it ran with.
for arg in "$@"; do
  case "$arg" in
    --benchmark_out=*) out="${arg#*=}" ;;
    --benchmark_filter=*) echo "${arg#*=}" >"$STUB_NOTES/filter" ;;
    --benchmark_list_tests) printf '%s\n' BM_WarmHitDisk/tiny/real_time BM_HitVsLoad/tiny/iterations:1/real_time \
                              BM_ColdCompile/mdspan-suite/iterations:1/real_time; exit 0 ;;
  esac
done
echo "$CUBBY_REMOTE" >"$STUB_NOTES/remote"
port="${CUBBY_REMOTE##*:}"
if [ -n "$CUBBY_REMOTE" ] && exec 3<>"/dev/tcp/127.0.0.1/$port"; then
  printf 'PING\r\n' >&3; IFS= read -r -t 2 reply <&3; echo "${reply%$'\r'}" >"$STUB_NOTES/ping"
fi
cat >"$out" <<'JSON'
{"context": {"cubby_bench_schema": "2", "gpu": "no: stub"},
 "benchmarks": [{"name": "BM_WarmHitDisk/tiny/real_time", "run_type": "iteration", "real_time": 7.5,
                 "time_unit": "us", "speedup_vs_cold": 3000.0}]}
JSON
"""


class BenchSh(Workdir):
    """ci/bench.sh around a stand-in cubby_bench (--no-build): what it writes and the Redis it starts."""

    def setUp(self):
        super().setUp()
        script = ROOT / "ci/bench.sh"
        missing = subprocess.run(
            ["bash", "-c", 'source ci/lib.sh; for p in "${CUBBY_APT_PACKAGES[@]}" "${CUBBY_BENCH_APT_PACKAGES[@]}" '
                           '"${CUBBY_PYTHON_APT_PACKAGES[@]}"; do dpkg-query -W -f="\\${Status}" "$p" 2>/dev/null '
                           '| grep -q "install ok installed" || echo "$p"; done'],
            cwd=ROOT, capture_output=True, text=True).stdout.split()
        if missing or not script.exists():
            self.skipTest(f"ci/bench.sh would install {missing} first (run ci/test.sh, which installs them)")
        stub = self.dir / "build/bench/cubby_bench"
        stub.parent.mkdir(parents=True)
        stub.write_text(STUB_CUBBY_BENCH)
        stub.chmod(0o755)
        (self.dir / "notes").mkdir()

    def bench_sh(self, *args, **env):
        environment = {k: v for k, v in os.environ.items()
                       if k not in ("CUBBY_DIR", "CUBBY_REMOTE", "CUBBY_BENCH_HISTORY", "CUBBY_BENCH_REMOTE")}
        environment.update(CUBBY_BUILD_DIR=str(self.dir / "build"), CUBBY_BENCH_OUT=str(self.dir / "out"),
                           CUBBY_BENCH_SUITE="0", CUBBY_BENCH_DASHBOARD="0", STUB_NOTES=str(self.dir / "notes"),
                           **env)
        done = subprocess.run(["bash", str(ROOT / "ci/bench.sh"), "--no-build", *args], cwd=ROOT, env=environment,
                              capture_output=True, text=True, timeout=120)
        if "no CUDA toolkit found" in done.stderr:
            self.skipTest("no CUDA toolkit (ci/bench.sh needs one)")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        return done

    def test_without_record_tracked_files_stay_untouched(self):
        history = ROOT / "bench/results/history.jsonl"
        status = ["git", "-C", str(ROOT), "status", "--porcelain", "--", "bench/results"]
        before = (subprocess.run(status, capture_output=True, text=True).stdout, history.read_bytes())
        done = self.bench_sh()
        self.assertEqual((subprocess.run(status, capture_output=True, text=True).stdout, history.read_bytes()), before)
        self.assertIn("not recorded", done.stderr)
        out = self.dir / "out"
        line = json.loads((out / "history-line.jsonl").read_text())
        self.assertEqual(line["workloads"]["tiny"]["warm_disk_us"], 7.5)
        committed = before[1].decode().splitlines()
        self.assertEqual((out / "history.jsonl").read_text().splitlines(),
                         committed + [(out / "history-line.jsonl").read_text().strip()])

    def test_the_default_run_leaves_out_the_gpu_families_and_mdspan_suite_without_a_gpu(self):
        done = self.bench_sh(CUBBY_BENCH_GPU="no")
        self.assertEqual((self.dir / "notes/filter").read_text().strip(), r"^(BM_WarmHitDisk/tiny/real_time)$")
        self.assertIn("left out (1), needs a GPU: BM_HitVsLoad", done.stderr)
        self.assertIn("left out (1), full run only (ci/bench.sh --full): the mdspan-suite workload", done.stderr)
        self.assertEqual(done.stderr.count("Library was built as DEBUG"), 1)  # the explanation, once
        full = self.bench_sh("--full", CUBBY_BENCH_GPU="no")
        self.assertEqual((self.dir / "notes/filter").read_text().strip(),
                         r"^(BM_WarmHitDisk/tiny/real_time|BM_ColdCompile/mdspan-suite/iterations:1/real_time)$")
        self.assertIn("about 20 min", full.stderr)

    def test_record_appends_to_the_history(self):
        history = self.write("h.jsonl", '{"schema": 1, "commit": "old"}\n')
        done = self.bench_sh("--record", CUBBY_BENCH_HISTORY=str(history))
        lines = history.read_text().splitlines()
        self.assertEqual(len(lines), 2, done.stderr)
        self.assertEqual(json.loads(lines[1])["workloads"]["tiny"]["warm_disk_us"], 7.5)
        self.assertIn("recorded: appended this run", done.stderr)

    def test_remote_families_get_a_private_redis_stopped_at_exit(self):
        if not shutil.which("redis-server") and not os.environ.get("CUBBY_TEST_REDIS_SERVER"):
            self.skipTest("no redis-server")
        self.bench_sh()
        url = (self.dir / "notes/remote").read_text().strip()
        self.assertRegex(url, r"^redis://127\.0\.0\.1:\d+$")
        self.assertEqual((self.dir / "notes/ping").read_text().strip(), "+PONG")
        import socket
        with self.assertRaises(OSError):  # stopped at exit: nothing listens there any more
            socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=2).close()


class _capture_stderr:
    def __enter__(self):
        import io
        self.old, sys.stderr = sys.stderr, io.StringIO()
        return sys.stderr

    def __exit__(self, *exc):
        sys.stderr = self.old


class Verdict(unittest.TestCase):
    """The verdict the report ends with: this run against the earlier runs of its own machine."""

    @staticmethod
    def run_record(disk, cold=300.0, machine_id="aaaa", goals=()):
        return {"machine": {"cpus": 2, "gpu": False, "id": machine_id},
                "workloads": {"tiny": {"warm_disk_us": disk, "cold_ms": cold}},
                "goals": [{"goal": g, "status": "fail"} for g in goals]}

    def test_a_first_run_records_the_baseline_even_beside_another_machine_of_its_description(self):
        other = [self.run_record(10, machine_id="bbbb") for _ in range(5)]
        other.append({"machine": {"cpus": 2, "gpu": False}, "workloads": {"tiny": {"warm_disk_us": 10}}})
        mine = self.run_record(30)
        status, text = bench_report.verdict(mine, other + [mine])
        self.assertEqual(status, "baseline")
        self.assertEqual(text, "first run: baseline recorded")

    def test_still_fast_only_when_within_the_band_and_every_goal_holds(self):
        earlier = [self.run_record(d) for d in (10, 10.2, 9.9, 10.1)]
        status, text = bench_report.verdict(self.run_record(10.3), earlier)
        self.assertEqual(status, "fast")
        self.assertIn("still fast (2 metrics within the noise band)", text)
        status, text = bench_report.verdict(self.run_record(10.3, goals=["tiny warm disk hit <= 20 us"]), earlier)
        self.assertEqual(status, "goals-fail")
        self.assertNotIn("still fast", text)
        self.assertIn("1 goal fails: tiny warm disk hit <= 20 us", text)

    def test_slower_beyond_the_noise_band_names_the_metric(self):
        earlier = [self.run_record(d) for d in (10, 10.2, 9.9, 10.1)]
        status, text = bench_report.verdict(self.run_record(14), earlier)
        self.assertEqual(status, "slower")
        self.assertIn("slower by 39% (beyond its noise band): tiny warm disk hit", text)

    def test_too_few_earlier_runs_give_no_verdict(self):
        status, text = bench_report.verdict(self.run_record(10), [self.run_record(10), self.run_record(11)])
        self.assertEqual(status, "none")
        self.assertIn("fewer than 3", text)

    def test_the_report_ends_with_the_verdict(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            (tmp / "bench.json").write_text(json.dumps(bench_json()))
            run = subprocess.run([sys.executable, str(ROOT / "bench" / "tools" / "bench_report.py"),
                                  "--bench", str(tmp / "bench.json"), "--out", str(tmp / "out"), "--commit", "abc",
                                  "--compare-history", str(tmp / "none.jsonl")],
                                 capture_output=True, text=True, check=True)
            self.assertTrue(run.stdout.rstrip().splitlines()[-1].startswith(
                "verdict for this machine: first run: baseline recorded"), run.stdout[-300:])


if __name__ == "__main__":
    unittest.main()
