#!/usr/bin/python3
"""The cost of a cuda.core program's hit through cubby: ``cubby.cuda_core.compile`` of a tiny
program with a name expression, answered from the handle's memory tier (median of --calls
calls after one compile), next to ``Cache.compile`` alone (the same request without cuda.core's
ProgramOptions and ObjectCode) and a disk hit (a new handle each call).

  cuda_core_hit.py --out cuda_core_hit.json [--calls 2000]

Needs cuda.core (>= 1.2) and the cubby package with libcubby; CUBBY_DIR is the store.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

SOURCE = "template <class T> __global__ void k(T* p) { *p = T(1); }"


def per_call_us(function, calls: int) -> float:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        function()
        samples.append((time.perf_counter() - start) * 1e6)
    return round(statistics.median(samples), 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    from cuda.core import Device, ProgramOptions

    import cubby
    from cubby import cuda_core

    device = Device()
    device.set_current()
    options = ProgramOptions(arch=f"sm_{device.arch}")
    names = ["k<float>"]
    with cubby.Cache() as cache:
        first = cuda_core.compile(SOURCE, options, names, cache=cache)
        first.get_kernel("k<float>")
        memory = per_call_us(lambda: cuda_core.compile(SOURCE, options, names, cache=cache),
                             args.calls)
        rest, arch = cuda_core.split_arch(options.as_bytes("nvrtc", "cubin"))
        bare = per_call_us(lambda: cache.compile(SOURCE, names, rest, arch, options.name),
                           args.calls)
        as_bytes = per_call_us(lambda: options.as_bytes("nvrtc", "cubin"), args.calls)

    def disk_hit():
        with cubby.Cache() as fresh:
            cuda_core.compile(SOURCE, options, names, cache=fresh)

    disk = per_call_us(disk_hit, min(args.calls, 200))
    result = {"memory_hit_us": memory, "cache_compile_us": bare, "options_as_bytes_us": as_bytes,
              "disk_hit_new_handle_us": disk, "calls": args.calls,
              "goal": {"memory_hit_us <= 50": "pass" if memory <= 50 else "fail"}}
    with open(args.out, "w") as file:
        json.dump(result, file, indent=2)
    print(json.dumps(result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
