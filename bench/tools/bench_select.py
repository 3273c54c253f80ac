#!/usr/bin/env python3
"""Which benchmarks ci/bench.sh runs: the default (quick) run or --full, with or without a GPU.

    cubby_bench --benchmark_list_tests | bench_select.py --gpu no [--full] [--regex] [--explain]

Reads benchmark names (one a line, as `--benchmark_list_tests` prints them) and prints the selected
ones, one a line, or with --regex one anchored regular expression for `--benchmark_filter` (POSIX
extended, as Google Benchmark reads it; empty when nothing is selected). --explain writes to stderr,
once per group, which benchmarks were left out and why.

Left out without a GPU (they need a driver to load modules): GPU_FAMILIES. Left out of the default
run (the full run has them; each takes minutes on a 2-core machine): LONG_BENCHMARKS, i.e. the
mdspan-suite workload (25 programs compiled cold in several variants, and once more for its warm
store) and store_bench's 100,000-entry families (the fill takes 10-80 s).
"""
from __future__ import annotations

import argparse
import re
import sys

# Benchmarks that load modules on a GPU: (pattern, what they measure).
GPU_FAMILIES = [
    (r"^BM_HitVsLoad/", "BM_HitVsLoad (hit + module load against the bare load)"),
    (r"^BM_FleetFirstRunLoaded/", "BM_FleetFirstRunLoaded (fleet first run with module loads)"),
    (r"^BM_NameRecovery/[^/]+/(driver|load_only)(/|$)", "BM_NameRecovery/*/{driver,load_only} (driver enumeration)"),
]

# Benchmarks only the full run has: (pattern, why).
LONG_BENCHMARKS = [
    (r"/mdspan-suite(/|$)", "the mdspan-suite workload (25 programs compiled cold several times: about 10 min)"),
    (r"^BM_Store(HitDisk|Gc)/100000(/|$)", "store_bench's 100,000-entry store (the fill: 10-80 s)"),
]

# cubby_recovery_bench compiles its corpora before it can list its benchmarks: its filter without a
# GPU is written out instead (the methods that read the CUBIN's bytes, no driver).
RECOVERY_WITHOUT_GPU = r"^BM_NameRecovery/[^/]+/(matcher|matcher_text|matcher_cufilt|baseline)$"

_ERE_SPECIAL = re.compile(r"([.\[\]{}()\\*+?^$|])")


def select(names: list[str], gpu: bool, full: bool) -> tuple[list[str], dict[str, list[str]]]:
    """The selected names, in order, and {reason: names left out for it}."""
    kept: list[str] = []
    left_out: dict[str, list[str]] = {}
    rules = ([] if gpu else [(p, f"needs a GPU: {why}") for p, why in GPU_FAMILIES]) + \
            ([] if full else [(p, f"full run only (ci/bench.sh --full): {why}") for p, why in LONG_BENCHMARKS])
    for name in names:
        reason = next((why for pattern, why in rules if re.search(pattern, name)), None)
        if reason is None:
            kept.append(name)
        else:
            left_out.setdefault(reason, []).append(name)
    return kept, left_out


def filter_regex(names: list[str]) -> str:
    """An anchored POSIX extended regular expression matching exactly `names` ("" for none)."""
    if not names:
        return ""
    return "^(" + "|".join(_ERE_SPECIAL.sub(r"\\\1", n) for n in names) + ")$"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", choices=("yes", "no"), required=True, help="is a GPU usable here")
    parser.add_argument("--full", action="store_true", help="the full run: keep the long benchmarks")
    parser.add_argument("--regex", action="store_true", help="print one --benchmark_filter expression")
    parser.add_argument("--recovery", action="store_true",
                        help="print cubby_recovery_bench's filter (empty: all) instead; reads no names")
    parser.add_argument("--explain", action="store_true", help="say on stderr what was left out and why")
    args = parser.parse_args(argv)
    if args.recovery:
        print("" if args.gpu == "yes" else RECOVERY_WITHOUT_GPU)
        return 0
    names = [line.strip() for line in sys.stdin if line.strip()]
    kept, left_out = select(names, args.gpu == "yes", args.full)
    if args.explain:
        for reason, skipped in left_out.items():
            print(f"left out ({len(skipped)}), {reason}", file=sys.stderr)
    if args.regex:
        print(filter_regex(kept))
    else:
        for name in kept:
            print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
