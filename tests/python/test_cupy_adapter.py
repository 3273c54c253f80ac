"""The CuPy adapter (pytest_plugin/src/cubby/cupy_adapter.py) against a fake cupy.cuda.compiler
that follows CuPy's kernel-cache backend protocol: load(name) -> bytes | None before compiling,
save(name, payload, source) after."""

from __future__ import annotations

import re

import pytest

from conftest import needs_library

pytestmark = needs_library

FAKE_COMPILER = '''
import hashlib, os

class _DiskBackend:
    """Stands in for CuPy's own backend; records every call so tests can see it was bypassed."""
    calls = []
    def load(self, name):
        self.calls.append(("load", name))
        return None
    def save(self, name, cubin, source):
        self.calls.append(("save", name))

_kernel_cache_backend = _DiskBackend()
compiled = []

def _set_kernel_cache_backend(backend):
    global _kernel_cache_backend
    _kernel_cache_backend = backend

def payload_for(source):
    """What "compiling" `source` produces: every byte value, so byte-for-byte matters."""
    return bytes(range(256)) + b"\\x00cubin:" + source.encode()

def compile_with_cache(source):
    name = hashlib.sha1(source.encode()).hexdigest() + ".cubin"
    cached = _kernel_cache_backend.load(name)
    if cached is not None:
        return cached
    compiled.append(name)
    payload = payload_for(source)
    _kernel_cache_backend.save(name, payload, source)
    return payload
'''

SUITE = '''
import pytest
from cupy.cuda import compiler

@pytest.mark.parametrize("index", range(3))
def test_kernel(index):
    source = "__global__ void k%d() {{}}" % index
    assert compiler.compile_with_cache(source) == compiler.payload_for(source)

def test_zz_cupy_backend_was_bypassed():
    expected = "_DiskBackend" if {expect_default} else "CubbyKernelCacheBackend"
    assert type(compiler._kernel_cache_backend).__name__ == expected
    assert bool(compiler._DiskBackend.calls) == {expect_default}
'''


@pytest.fixture
def fake_cupy(pytester):
    def make(version="14.0.0"):
        pytester.mkpydir("cupy").joinpath("__init__.py").write_text(f"__version__ = {version!r}\n")
        cuda = pytester.path / "cupy" / "cuda"
        cuda.mkdir()
        (cuda / "__init__.py").write_text("")
        (cuda / "compiler.py").write_text(FAKE_COMPILER)
        pytester.syspathinsert()
    return make


def cupy_line(result) -> str:
    match = re.search(r"^cupy: .*$", result.stdout.str(), re.M)
    assert match, result.stdout.str()
    return match.group(0)


def test_cupy_payloads_are_stored_and_served_byte_for_byte(pytester, run, env, store, fake_cupy):
    fake_cupy()
    env.setenv("PYTHONPATH", f"{pytester.path}:{__import__('os').environ['PYTHONPATH']}")
    pytester.makepyfile(test_suite=SUITE.format(expect_default=False))
    cold = run(f"--cubby-dir={store}")
    cold.assert_outcomes(passed=4)
    assert "installed (CuPy 14.0.0, namespace 'cupy')" in cupy_line(cold)
    assert "loads hit 0, missed 3, saved 3" in cupy_line(cold)
    warm = run(f"--cubby-dir={store}", "--cubby-require-warm")
    warm.assert_outcomes(passed=4)
    assert "loads hit 3, missed 0, saved 0" in cupy_line(warm)
    assert "3 entries" in warm.stdout.str()


def test_under_xdist_the_workers_install_the_backend_and_the_summary_says_so(
        pytester, run, env, store, fake_cupy):
    pytest.importorskip("xdist")
    fake_cupy()
    env.setenv("PYTHONPATH", f"{pytester.path}:{__import__('os').environ['PYTHONPATH']}")
    pytester.makepyfile(test_suite=SUITE.format(expect_default=False))
    cold = run("-p", "xdist.plugin", "-n", "2", f"--cubby-dir={store}")
    cold.assert_outcomes(passed=4)
    line = cupy_line(cold)
    assert "installed in the xdist workers" in line and "missed 3, saved 3" in line, line


def test_no_cubby_cupy_leaves_cupys_backend_alone(pytester, run, env, store, fake_cupy):
    fake_cupy()
    env.setenv("PYTHONPATH", f"{pytester.path}:{__import__('os').environ['PYTHONPATH']}")
    pytester.makepyfile(test_suite=SUITE.format(expect_default=True))
    result = run(f"--cubby-dir={store}", "--no-cubby-cupy")
    result.assert_outcomes(passed=4)
    assert "off (--no-cubby-cupy)" in cupy_line(result)
    assert "0 entries" in result.stdout.str()


def test_cupy_older_than_14_is_left_alone(pytester, run, env, store, fake_cupy):
    fake_cupy(version="13.6.0")
    env.setenv("PYTHONPATH", f"{pytester.path}:{__import__('os').environ['PYTHONPATH']}")
    pytester.makepyfile(test_suite=SUITE.format(expect_default=True))
    result = run(f"--cubby-dir={store}")
    result.assert_outcomes(passed=4)
    assert "CuPy 13.6.0 is older than 14" in cupy_line(result)


def test_require_warm_fails_a_test_where_cupy_compiles(pytester, run, env, store, fake_cupy):
    fake_cupy()
    env.setenv("PYTHONPATH", f"{pytester.path}:{__import__('os').environ['PYTHONPATH']}")
    pytester.makepyfile(test_suite=SUITE.format(expect_default=False))
    result = run(f"--cubby-dir={store}", "--cubby-require-warm")
    result.assert_outcomes(failed=3, passed=1)
    assert "CuPy compiled" in result.stdout.str()


def test_the_backend_round_trips_through_a_cache(tmp_path):
    import cubby
    from cubby import cupy_adapter

    with cubby.Cache(tmp_path) as cache:
        backend = cupy_adapter.CubbyKernelCacheBackend(cache)
        assert backend.load("a.cubin") is None
        payload = bytes(range(256)) * 4
        backend.save("a.cubin", payload, "source")
        assert backend.load("a.cubin") == payload
        counters = backend.counters()
        assert counters.pop("cupy_load_ms") >= 0
        assert counters == {"cupy_hits": 1, "cupy_misses": 1, "cupy_saves": 1}
    with cubby.Cache(tmp_path) as other:
        assert cupy_adapter.CubbyKernelCacheBackend(other).load("a.cubin") == payload


def test_a_worker_waits_for_the_kernel_another_worker_compiles(tmp_path):
    """Two backends on one store stand for two xdist workers: the second asks for the kernel the
    first is compiling, waits, and gets the first one's payload (one compile, not two)."""
    import threading

    import cubby
    from cubby import cupy_adapter

    with cubby.Cache(tmp_path) as first, cubby.Cache(tmp_path) as second:
        compiler, waiter = (cupy_adapter.CubbyKernelCacheBackend(c) for c in (first, second))
        assert compiler.load("k.cubin") is None  # a miss: claimed, "compiling"
        got = []
        thread = threading.Thread(target=lambda: got.append(waiter.load("k.cubin")))
        thread.start()
        thread.join(0.3)
        assert thread.is_alive(), "the second worker did not wait for the first one's compile"
        compiler.save("k.cubin", b"\x00payload", "source")
        thread.join(30)
        assert got == [b"\x00payload"]
        counters = waiter.counters()
        assert counters.pop("cupy_load_ms") >= 250, "the wait for the other compile is counted"
        assert counters == {"cupy_hits": 1, "cupy_misses": 0, "cupy_saves": 0}
        assert second.stats()["waited_for_others"] == 1


def test_a_failed_compile_gives_its_claim_back_at_the_next_load(tmp_path, monkeypatch):
    """CuPy compiles on the thread that asked: when save() never comes (the compile failed), the
    thread's next load() gives the claim back, so another worker compiles it without waiting."""
    import threading
    import time

    import cubby
    from cubby import cupy_adapter

    monkeypatch.setattr(cupy_adapter, "CLAIM_WAIT_S", 60.0)
    with cubby.Cache(tmp_path) as first, cubby.Cache(tmp_path) as second:
        failing, other = (cupy_adapter.CubbyKernelCacheBackend(c) for c in (first, second))
        assert failing.load("bad.cubin") is None  # claimed; its compile "fails": no save()
        assert failing.load("next.cubin") is None  # gives bad.cubin back
        got = []
        started = time.perf_counter()
        thread = threading.Thread(target=lambda: got.append(other.load("bad.cubin")))
        thread.start()
        thread.join(30)
        assert got == [None]
        assert time.perf_counter() - started < 20, "waited for a claim that was given back"


def test_an_unconfigured_session_whose_tests_use_cupy_is_active(pytester, run, env, fake_cupy):
    # No --cubby-*, CUBBY_* or ini setting: the test modules importing CuPy switch the plugin on.
    fake_cupy()
    env.setenv("PYTHONPATH", f"{pytester.path}:{__import__('os').environ['PYTHONPATH']}")
    pytester.makepyfile(test_suite=SUITE.format(expect_default=False))
    result = run()
    result.assert_outcomes(passed=4)
    assert "loads hit 0, missed 3, saved 3" in cupy_line(result)


def test_an_unconfigured_session_with_cupy_installed_but_unused_is_quiet(pytester, run, env,
                                                                        fake_cupy):
    fake_cupy()
    env.setenv("PYTHONPATH", f"{pytester.path}:{__import__('os').environ['PYTHONPATH']}")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = run()
    result.assert_outcomes(passed=1)
    assert not [line for line in result.stdout.lines
                if "cubby" in line and not line.startswith("rootdir:")], result.stdout.str()
