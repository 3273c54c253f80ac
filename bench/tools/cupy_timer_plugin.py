"""A pytest plugin that splits a CuPy test session's time (bench/tools/cupy_warm_profile.py loads
it with ``-p cupy_timer_plugin``): the session's phases (start-up up to the first hook,
collection, the test loop, the end), CuPy's module compile-with-cache calls (the whole per-module
path: cache lookup, compile or cubby, module load) and, when the cubby plugin serves CuPy, each
``cubby.Cache.compile`` call, preceded by an untimed-for-the-run ``Cache.key`` of the same request
(so the key derivation's share of a hit shows). Writes a JSON object to $CUPY_TIMER_OUT at the end.
With CUPY_TIMER_KEYS=0 no extra key call is made (the plain run's timings)."""

from __future__ import annotations

import functools
import json
import os
import time

_START = time.perf_counter()
_marks = {}
_calls = {"module": [], "cubby_compile": [], "cubby_key": []}


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

    @functools.wraps(original)
    def compile_(self, source, name_expressions=(), options=(), arch=None, program_name=None):
        if with_key:
            start = time.perf_counter()
            self.key(source, name_expressions, options, arch, program_name)
            _calls["cubby_key"].append(time.perf_counter() - start)
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
    _marks["configure"] = time.perf_counter() - _START
    _wrap_cubby()
    _wrap_cupy()


def pytest_collection_finish(session):
    _marks["collected"] = time.perf_counter() - _START


def pytest_runtestloop(session):
    _marks["loop_start"] = time.perf_counter() - _START


def pytest_sessionfinish(session):
    _marks["loop_end"] = time.perf_counter() - _START


def pytest_unconfigure(config):
    _marks["unconfigure"] = time.perf_counter() - _START
    out = os.environ.get("CUPY_TIMER_OUT")
    if not out:
        return
    summary = {name: {"count": len(values), "total_s": round(sum(values), 6),
                      "max_s": round(max(values), 6) if values else 0.0}
               for name, values in _calls.items()}
    with open(out, "w") as stream:
        json.dump({"marks_s": {k: round(v, 6) for k, v in _marks.items()}, "calls": summary},
                  stream)
