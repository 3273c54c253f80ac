"""A pytest plugin that splits a CuPy test session's time (bench/tools/cupy_warm_profile.py loads
it with ``-p cupy_timer_plugin``): the session's phases (start-up up to the first hook,
collection, the test loop, the end), CuPy's module compile-with-cache calls (the whole per-module
path: cache lookup, compile or cubby, module load) and, when the cubby plugin serves CuPy, each
``cubby.Cache.compile`` call, preceded by an untimed-for-the-run ``Cache.key`` of the same request
(so the key derivation's share of a hit shows) and that key again (``cubby_key_again``: the cost
with nothing pending since the last call). Writes a JSON object to $CUPY_TIMER_OUT at the end;
under pytest-xdist each worker writes its own to $CUPY_TIMER_OUT.<worker id> (the same fields, plus
the worker's process start), and the controller adds when each worker went down and the CPU time
of its children. With CUPY_TIMER_REQUESTS=FILE each ``cubby.Cache.compile`` request is
appended to FILE as one JSON line (source, names, options, arch, program_name), for
bench/tools/replay_requests.py to replay off the GPU machine. Every mark is also kept as seconds
since the epoch (``marks_epoch``), so the controller's and the workers' phases line up. With
CUPY_TIMER_KEYS=0 no extra key call is made (the plain run's timings); with CUPY_TIMER_PROFILE=DIR
every process runs under cProfile from its configure to its unconfigure and writes
DIR/<worker id or "main">.prof."""

from __future__ import annotations

import cProfile
import functools
import json
import os
import resource
import time

import pytest

_START = time.perf_counter()
_EPOCH = time.time()  # the epoch time of _START
_marks = {}
_calls = {"module": [], "cubby_compile": [], "cubby_key": [], "cubby_key_again": []}
_tests = {"setup": 0.0, "call": 0.0, "teardown": 0.0}
_nodes_down = {}
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
_profile = None


def _process_start_epoch() -> float:
    """When this process started (seconds since the epoch, to 10 ms): its start in clock ticks
    after boot (/proc/self/stat) against the uptime (/proc/uptime); 0 where unreadable."""
    try:
        with open("/proc/self/stat") as stream:
            ticks = int(stream.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as stream:
            uptime = float(stream.read().split()[0])
        return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def _mark(name: str) -> None:
    _marks[name] = time.perf_counter() - _START


def _timed(bucket, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _calls[bucket].append(time.perf_counter() - start)
    return wrapper


def _wrap_cubby() -> None:
    try:
        from cubby import _cache
    except ImportError:
        return
    original = _cache.Cache.compile
    with_key = os.environ.get("CUPY_TIMER_KEYS", "1") != "0"

    requests = os.environ.get("CUPY_TIMER_REQUESTS")

    @functools.wraps(original)
    def compile_(self, source, name_expressions=(), options=(), arch=None, program_name=None):
        if requests:
            with open(requests, "a", encoding="utf-8") as out:
                out.write(json.dumps({"source": source, "names": list(name_expressions),
                                      "options": list(options), "arch": arch,
                                      "program_name": program_name}) + "\n")
        if with_key:
            start = time.perf_counter()
            self.key(source, name_expressions, options, arch, program_name)
            _calls["cubby_key"].append(time.perf_counter() - start)
            # The same key at once: what a key costs with nothing pending since the last call.
            start = time.perf_counter()
            self.key(source, name_expressions, options, arch, program_name)
            _calls["cubby_key_again"].append(time.perf_counter() - start)
        start = time.perf_counter()
        try:
            return original(self, source, name_expressions, options, arch, program_name)
        finally:
            _calls["cubby_compile"].append(time.perf_counter() - start)
    _cache.Cache.compile = compile_


def _wrap_cupy() -> None:
    try:
        from cupy.cuda import compiler
    except ImportError:
        return
    compiler._compile_module_with_cache = _timed("module", compiler._compile_module_with_cache)


def pytest_configure(config):
    global _profile
    _mark("configure")
    if os.environ.get("CUPY_TIMER_PROFILE"):
        _profile = cProfile.Profile()
        _profile.enable()
    _wrap_cubby()
    _wrap_cupy()


def pytest_collection_finish(session):
    _mark("collected")


def pytest_runtestloop(session):
    _mark("loop_start")


def pytest_runtest_logreport(report):
    _tests[report.when] = _tests.get(report.when, 0.0) + report.duration


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):  # the xdist controller: a worker finished
    gateway = getattr(node, "gateway", None)
    _nodes_down[getattr(gateway, "id", None) or str(node)] = round(time.time(), 6)


def pytest_sessionfinish(session):
    _mark("loop_end")


def pytest_unconfigure(config):
    _mark("unconfigure")
    if _profile is not None:
        _profile.disable()
        _profile.dump_stats(os.path.join(os.environ["CUPY_TIMER_PROFILE"],
                                         f"{_WORKER or 'main'}.prof"))
    out = os.environ.get("CUPY_TIMER_OUT")
    if not out:
        return
    def quantile(values, q):
        return round(sorted(values)[min(len(values) - 1, int(q * len(values)))], 6) if values else 0.0

    # The first call apart (a new process's first key walks or checks its scan), then the spread.
    summary = {name: {"count": len(values), "total_s": round(sum(values), 6),
                      "max_s": round(max(values), 6) if values else 0.0,
                      "first_s": round(values[0], 6) if values else 0.0,
                      "p50_s": quantile(values, 0.5), "p90_s": quantile(values, 0.9)}
               for name, values in _calls.items()}
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    record = {"marks_s": {k: round(v, 6) for k, v in _marks.items()},
              "marks_epoch": {k: round(_EPOCH + v, 6) for k, v in _marks.items()},
              "process_start_epoch": round(_process_start_epoch(), 3),
              "cpu_s": round(time.process_time(), 4),
              # The main thread's own (pytest's loop and hooks; cpu_s less this: other threads).
              "main_thread_cpu_s": round(time.thread_time(), 4),
              "children_cpu_s": round(children.ru_utime + children.ru_stime, 4),
              "tests_s": {k: round(v, 4) for k, v in _tests.items()},
              "calls": summary}
    if _nodes_down:
        record["nodes_down_epoch"] = _nodes_down
    with open(out + (f".{_WORKER}" if _WORKER else ""), "w") as stream:
        json.dump(record, stream)
