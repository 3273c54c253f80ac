"""Replays recorded cubby.Cache.compile requests (JSON lines, as bench/tools/cupy_timer_plugin.py
writes them with CUPY_TIMER_REQUESTS=FILE) through one cubby.Cache in a fresh process, as a test
session asks for them, and says what the asking thread spent:

    python3 bench/tools/replay_requests.py FILE [--read-ahead] [--collect-seconds S] [--json]

The store and the suite come from CUBBY_DIR and CUBBY_SUITE (run it once to fill and record the
suite, then again warm). The main thread waits --collect-seconds (what pytest's collection gives
the warm-up thread, default 0.4), then replays every request. With --read-ahead, a thread reads
the suite ahead meanwhile (Cache.read_ahead, as the pytest plugin's warm-up does), and the replay
starts once it is done too (its time is printed: compare it with the collection's). Prints the
replay's wall and thread CPU milliseconds and the tiers that served it."""

from __future__ import annotations

import argparse
import collections
import json
import sys
import threading
import time


def thread_cpu_ms() -> float:
    # CLOCK_THREAD_CPUTIME_ID: exact; getrusage's user and system split is scaled from ticks and
    # over a short interval can exceed the wall time.
    return time.thread_time() * 1000.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("requests", help="JSON lines of requests (CUPY_TIMER_REQUESTS)")
    parser.add_argument("--read-ahead", action="store_true",
                        help="read the suite ahead in a thread first (Cache.read_ahead)")
    parser.add_argument("--collect-seconds", type=float, default=0.4,
                        help="how long the main thread waits before replaying (default 0.4)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    import cubby

    with open(args.requests, encoding="utf-8") as lines:
        requests = [json.loads(line) for line in lines if line.strip()]
    with cubby.Cache() as cache:
        read = {}

        def read_ahead() -> None:
            begun = time.perf_counter()
            read["count"] = cache.read_ahead().read
            read["ms"] = round((time.perf_counter() - begun) * 1000.0, 1)

        reader = threading.Thread(target=read_ahead)
        if args.read_ahead:
            reader.start()
        time.sleep(args.collect_seconds)
        if args.read_ahead:
            reader.join()
        tiers = collections.Counter()
        start, cpu = time.perf_counter(), thread_cpu_ms()
        for r in requests:
            tiers[cache.compile(r["source"], r["names"], r["options"], r["arch"],
                                r["program_name"]).tier] += 1
        # The CPU interval inside the wall one, so the thread's CPU never exceeds the wall time.
        cpu_ms = thread_cpu_ms() - cpu
        wall_ms = (time.perf_counter() - start) * 1000.0
    result = {"requests": len(requests), "read_ahead": read.get("count"),
              "read_ahead_ms": read.get("ms"), "wall_ms": wall_ms, "cpu_ms": cpu_ms,
              "tiers": dict(tiers)}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['requests']} requests: {wall_ms:.1f} ms wall, {cpu_ms:.1f} ms "
              f"CPU on the asking thread; read ahead {result['read_ahead']} entries in "
              f"{result['read_ahead_ms']} ms; tiers {result['tiers']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
