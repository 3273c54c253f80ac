"""A pytest plugin of bench/suite/cupy_suite.py (loaded with ``-p suite_probe``, bench/suite on
PYTHONPATH): at the end of a session it writes one JSON object to $CUBBY_SUITE_PROBE:

  tests          outcomes: passed, failed, skipped, errors, xfailed, xpassed (a setup or teardown
                 failure is an error, as pytest counts it)
  require_warm   how many tests failed because of --cubby-require-warm (a compile during a test)
  failed_tests   the first 20 node ids that failed or errored
  counters       the cubby plugin's counters for the session, every process added up (xdist
                 workers included): what its terminal section prints; {} without the plugin
  main_thread_cpu_s  the CPU seconds of the session's main thread until then (pytest's loop and
                 hooks, the tests' own work), against cupy_suite.py's CPU of the whole process
                 tree: what other threads and processes (a warm-up, xdist workers) add
  process_cpu_s  the CPU seconds of the session's process (every thread) until then: with
                 main_thread_cpu_s, what its other threads add (the cubby warm-up, CUDA's)
  nvrtc_libraries  the libnvrtc files mapped into the session's process (/proc/self/maps): one
                 when CuPy and cubby use the same NVRTC, two when each loaded its own
  speed_calib_s  the CPU seconds the main thread then takes for a fixed loop (CALIBRATION_LOOPS
                 additions): the machine's speed at the session's end. On a shared machine one
                 configuration's runs spread by 30% or more with its speed; a run's seconds over
                 it compare configurations with less of that noise (cupy_suite.py's
                 speed_ratio). Measured after the main thread's CPU above, so not in it
  prefetch_started  whether the cubby plugin started a prefetch process beside the session
  read_ahead     [read, lacking] of the plugin's CuPy warm-up read-ahead (Cache.read_ahead), null
                 when it made none or it failed

Only the controller writes (pytest-xdist sends the workers' reports to it). It reads the cubby
plugin's session totals (the object pytest registers as "cubby-session"), so it must run before
that plugin's unconfigure: its own unconfigure is tryfirst."""

from __future__ import annotations

import json
import os
import time

import pytest

_REQUIRE_WARM = "--cubby-require-warm"
CALIBRATION_LOOPS = 2_000_000  # about 60 ms of one H200 host core
_outcomes = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0, "xfailed": 0, "xpassed": 0}
_failed: list = []
_require_warm = 0


def pytest_runtest_logreport(report) -> None:
    global _require_warm
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if xfail:
            _outcomes["xfailed" if report.skipped else "xpassed"] += 1
        else:
            _outcomes[report.outcome] += 1
    elif report.failed:
        _outcomes["errors"] += 1
    elif report.when == "setup" and report.skipped:
        _outcomes["xfailed" if xfail else "skipped"] += 1
    if report.failed:
        if len(_failed) < 20:
            _failed.append(report.nodeid)
        if _REQUIRE_WARM in str(report.longrepr):
            _require_warm += 1


def _speed_calibration() -> float:
    start = time.thread_time()
    total = 0
    for value in range(CALIBRATION_LOOPS):
        total += value
    return time.thread_time() - start


def _nvrtc_libraries() -> list:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {line.split(None, 5)[-1].strip() for line in maps if "libnvrtc" in line}
    except OSError:
        return []
    return sorted(path for path in paths if "libnvrtc-builtins" not in path)


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config) -> None:
    out = os.environ.get("CUBBY_SUITE_PROBE")
    if not out or hasattr(config, "workerinput"):
        return
    plugin = config.pluginmanager.get_plugin("cubby-session")
    counters = dict(getattr(plugin, "totals", None) or {})
    done = getattr(plugin, "read_ahead_done", None)
    main_thread_cpu_s = round(time.thread_time(), 4)
    with open(out, "w") as stream:
        json.dump({"tests": _outcomes, "require_warm": _require_warm, "failed_tests": _failed,
                   "counters": counters, "main_thread_cpu_s": main_thread_cpu_s,
                   "process_cpu_s": round(time.process_time(), 4),
                   "speed_calib_s": round(_speed_calibration(), 5),
                   "nvrtc_libraries": _nvrtc_libraries(),
                   "prefetch_started": bool(getattr(plugin, "prefetch_started", False)),
                   "read_ahead": [done.read, done.lacking] if done is not None else None},
                  stream)
