"""github-action-benchmark's files from a results record (bench_report.py): the measurements
where smaller is better (customSmallerIsBetter) and where bigger is better (customBiggerIsBetter),
each {name, unit, value, extra}. Standard library only."""
from __future__ import annotations


def github_action_benchmark(record: dict) -> tuple[list, list]:
    """customSmallerIsBetter and customBiggerIsBetter entries ({name, unit, value, extra})."""
    extra = f"commit {record['commit']} on {record['machine'].get('host', '?')} " \
            f"(GPU: {record['machine'].get('gpu_name') or ('yes' if record['machine'].get('gpu') else 'none')})"
    smaller, bigger = [], []
    for name, w in record["workloads"].items():
        for field, label, unit in (("cold_ms", "cold compile", "ms"), ("warm_memory_us", "warm hit (memory)", "us"),
                                   ("warm_disk_us", "warm hit (disk)", "us"), ("warm_remote_us", "warm hit (remote)", "us"),
                                   ("load_baseline_us", "cuModuleLoadData baseline", "us"),
                                   ("warm_loaded_us", "warm hit + load", "us"),
                                   ("ratio_vs_load_baseline", "hit+load / load baseline", "x"),
                                   ("hit_load_ratio", "hit+load / bare load (interleaved median)", "x"),
                                   ("fleet_first_run_us", "fleet first run (Redis)", "us"),
                                   ("fleet_ratio_vs_local_warm", "fleet first run / local warm", "x"),
                                   ("fleet_loaded_us", "fleet first run + load (Redis)", "us"),
                                   ("fleet_loaded_ratio_vs_local_warm", "fleet first run + load / warm hit + load",
                                    "x")):
            if w.get(field) is not None:
                smaller.append({"name": f"{name}: {label}", "unit": unit, "value": w[field], "extra": extra})
        for field, label in (("speedup_disk", "speedup, disk hit vs cold"),
                             ("speedup_loaded", "speedup, hit + load vs cold"),
                             ("speedup_fleet_first_run", "speedup, fleet first run vs cold"),
                             ("speedup_fleet_loaded", "speedup, fleet first run + load vs cold")):
            if w.get(field) is not None:
                bigger.append({"name": f"{name}: {label}", "unit": "x", "value": w[field], "extra": extra})
        for variant, row in w.get("cold_suite", {}).items():
            smaller.append({"name": f"{name}: cold suite, {variant}", "unit": "ms", "value": row["ms"],
                            "extra": extra})
            if variant != "serial" and row.get("speedup_vs_serial") is not None:
                bigger.append({"name": f"{name}: cold suite, {variant} vs serial", "unit": "x",
                               "value": row["speedup_vs_serial"], "extra": extra})
    for name, s in record["suite"].items():
        smaller.append({"name": f"suite {name}: warm run", "unit": "s", "value": s["warm_s"], "extra": extra})
        if s.get("ratio"):
            bigger.append({"name": f"suite {name}: cold / warm", "unit": "x", "value": s["ratio"], "extra": extra})
        if s.get("edit_s") is not None:
            smaller.append({"name": f"suite {name}: run after a header edit", "unit": "s", "value": s["edit_s"],
                            "extra": extra})
        if s.get("edit_ratio"):
            bigger.append({"name": f"suite {name}: cold / after a header edit", "unit": "x",
                           "value": s["edit_ratio"], "extra": extra})
        if s.get("fleet_s") is not None:
            smaller.append({"name": f"suite {name}: fleet first run (Redis)", "unit": "s", "value": s["fleet_s"],
                            "extra": extra})
        if s.get("fleet_over_warm") is not None:
            smaller.append({"name": f"suite {name}: fleet first run / local warm", "unit": "x",
                            "value": s["fleet_over_warm"], "extra": extra})
        if s.get("cold_over_fleet") is not None:
            bigger.append({"name": f"suite {name}: cold / fleet first run", "unit": "x",
                           "value": s["cold_over_fleet"], "extra": extra})
    for workload, methods in record["recovery"].items():
        for method, accuracy in methods.items():
            bigger.append({"name": f"name recovery {workload}: {method}", "unit": "%",
                           "value": accuracy * 100, "extra": extra})
    return smaller, bigger
