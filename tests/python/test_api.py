"""The Python API (pytest_plugin/src/cubby/_cache.py, _library.py) over a real libcubby."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import cubby
from conftest import KERNEL, SRC, needs_library

pytestmark = needs_library

NAMES = ["ns::scale<float, 256>", "ns::scale<double, 64>"]


@pytest.fixture
def cache(tmp_path, env):
    with cubby.Cache(tmp_path / "store") as handle:
        yield handle


def test_compile_then_hit(cache, tmp_path):
    first = cache.compile(KERNEL, NAMES, ["-std=c++17"], "sm_90")
    assert first.hit is False and first.tier == "compiled"
    assert set(first.lowered_names) == set(NAMES)
    assert first.lowered_names["ns::scale<float, 256>"].startswith("_ZN2ns5scaleIfLi256E")
    assert first.cubin[:4] == b"\x7fELF" and first.payload_kind == "cubin"
    assert len(first.key) == 32 and first.key == cache.key(KERNEL, NAMES, ["-std=c++17"], "sm_90")
    again = cache.compile(KERNEL, list(reversed(NAMES)), ["-std=c++17"], "sm_90")
    assert (again.hit, again.tier, again.key, again.cubin) == (True, "memory", first.key, first.cubin)
    with cubby.Cache(tmp_path / "store") as other:
        from_disk = other.compile(KERNEL, NAMES, ["-std=c++17"], "sm_90")
        assert from_disk.tier == "disk" and from_disk.lowered_names == first.lowered_names
        assert from_disk.compile_ms == pytest.approx(first.compile_ms)
    stats = cache.stats()
    assert (stats["compiles"], stats["hits_memory"], stats["misses"]) == (1, 1, 1)
    assert cache.usage()[0] == 1
    assert cache.usage(estimate=True) == cache.usage()  # the counters, no walk
    assert cache.clear() == 1 and cache.usage() == (0, 0)
    assert cache.usage(estimate=True) == (0, 0)


def test_recent_stats_reads_again_only_after_a_call_of_the_handle(cache):
    first = cache.recent_stats()
    assert cache.recent_stats() is first  # no call since: the same figures, no call into libcubby
    cache.compile(KERNEL, NAMES, ["-std=c++17"], "sm_90")
    after = cache.recent_stats()
    assert after is not first and after["compiles"] == first["compiles"] + 1
    assert after == cache.stats()


def test_a_compile_error_carries_nvrtcs_log(cache):
    with pytest.raises(cubby.CompileError) as caught:
        cache.compile("__global__ void broken(float* d) { d[0] = undeclared_symbol; }",
                      arch="sm_90")
    assert "undeclared_symbol" in caught.value.log
    assert "undeclared_symbol" in str(caught.value)
    assert cache.stats()["compile_failures"] == 1


def test_blobs_round_trip_byte_for_byte(cache):
    payload = bytes(range(256)) * 3
    assert cache.blob_get("tool", "name") is None
    cache.blob_put("tool", "name", payload, compile_ms=5)
    assert cache.blob_get("tool", "name") == payload
    with pytest.raises(cubby.Error, match="namespace"):
        cache.blob_put("bad namespace", "name", b"x")


def test_a_removed_blob_is_gone_from_the_handle_and_the_store_and_the_others_stay(cache):
    cache.blob_put("tool", "a", b"1234")
    cache.blob_put("tool", "b", b"5678")
    assert cache.blob_remove("tool", "a") is True
    assert cache.blob_get("tool", "a") is None
    with cubby.Cache(cache.dir) as other:
        assert other.blob_get("tool", "a") is None
        assert other.blob_get("tool", "b") == b"5678"
    assert cache.blob_remove("tool", "a") is False
    with pytest.raises(cubby.Error, match="namespace"):
        cache.blob_remove("bad namespace", "a")


@pytest.fixture
def cuda_core(monkeypatch):
    """cubby.cuda_core over a stand-in for cuda.core.utils (the real one is tested on the GPU
    machine): its ProgramCacheResource has the abstract methods of cuda.core 1.2's, so a
    ProgramCache that lacks one cannot be made."""
    import abc
    import sys
    import types

    abstract = {name: abc.abstractmethod(lambda self, *args: None)
                for name in ("__getitem__", "__setitem__", "__delitem__", "__len__", "clear")}
    utils = types.ModuleType("cuda.core.utils")
    utils.ProgramCacheResource = abc.ABCMeta("ProgramCacheResource", (abc.ABC,), abstract)
    for name, module in (("cuda", types.ModuleType("cuda")),
                         ("cuda.core", types.ModuleType("cuda.core")), ("cuda.core.utils", utils)):
        monkeypatch.setitem(sys.modules, name, module)
    from cubby import cuda_core

    return cuda_core


def test_cuda_cores_program_cache_deletes_its_entries(cache, cuda_core):
    """del removes, a missing key is a KeyError."""
    programs = cuda_core.ProgramCache(cache)
    programs[b"key"] = b"cubin bytes"
    assert programs[b"key"] == b"cubin bytes"
    del programs[b"key"]
    with pytest.raises(KeyError):
        programs[b"key"]
    with pytest.raises(KeyError):
        del programs[b"key"]


def test_cuda_cores_program_cache_counts_and_clears_its_namespace_only(cache, cuda_core):
    """len counts the cuda-core blobs on disk; clear removes them, from this handle's memory too,
    and leaves other namespaces."""
    programs = cuda_core.ProgramCache(cache)
    assert len(programs) == 0
    programs[b"a"] = b"cubin a"
    programs["b"] = b"cubin b"
    programs[b"a"] = b"cubin a again"  # the same entry
    cache.blob_put("cupy", "a", b"cupy's")
    assert len(programs) == 2
    assert cache.usage(namespace="cuda-core")[0] == 2 and cache.usage()[0] == 3
    assert programs[b"a"] == b"cubin a again"  # now in the handle's memory tier
    programs.clear()
    assert len(programs) == 0
    with pytest.raises(KeyError):
        programs[b"a"]
    with pytest.raises(KeyError):
        programs["b"]
    assert cache.blob_get("cupy", "a") == b"cupy's"
    with cubby.Cache(cache.dir) as other:
        assert len(cuda_core.ProgramCache(other)) == 0
        assert other.blob_get("cupy", "a") == b"cupy's"
    programs.clear()  # nothing left: no error
    assert cache.clear(namespace="cupy") == 1 and cache.usage() == (0, 0)


def test_clearing_a_namespace_of_a_read_only_store_raises_and_keeps_it(cache, env, cuda_core):
    cuda_core.ProgramCache(cache)[b"a"] = b"cubin"
    env.setenv("CUBBY_READ_ONLY", "1")
    with cubby.Cache(cache.dir) as reader:
        programs = cuda_core.ProgramCache(reader)
        with pytest.raises(cubby.Error, match="read-only"):
            programs.clear()
        assert len(programs) == 1 and programs[b"a"] == b"cubin"
        with pytest.raises(cubby.Error, match="read-only"):  # the whole store's clear too
            reader.clear()
        assert reader.usage()[0] == 1


def test_namespace_arguments_are_checked(cache):
    with pytest.raises(cubby.Error, match="namespace"):
        cache.usage(namespace="bad namespace")
    with pytest.raises(cubby.Error, match="namespace"):
        cache.clear(namespace="bad/namespace")
    with pytest.raises(ValueError, match="not both"):
        cache.usage(estimate=True, namespace="cupy")
    with pytest.raises(TypeError, match="namespace must be a str"):
        cache.clear(namespace=b"cupy")


def test_arguments_are_checked(cache):
    with pytest.raises(TypeError, match="single string"):
        cache.compile(KERNEL, "ns::scale<float, 256>")
    with pytest.raises(TypeError, match="source must be a str"):
        cache.compile(b"bytes")


@pytest.mark.parametrize("call, message", [
    (lambda c: c.compile(123), "source must be a str, not int"),
    (lambda c: c.compile(KERNEL, [1]), r"name_expressions\[0\] must be a str, not int"),
    (lambda c: c.compile(KERNEL, options="-O3"), "options must be a sequence of strings, not a"),
    (lambda c: c.compile(KERNEL, options=b"-O3"), "options must be a sequence of strings, not a"),
    (lambda c: c.compile(KERNEL, options=3), "options must be a sequence of strings, not int"),
    (lambda c: c.compile(KERNEL, arch=90), "arch must be a str, not int"),
    (lambda c: c.compile(KERNEL, program_name=Path("k.cu")), "program_name must be a str"),
    (lambda c: c.key(KERNEL, [None]), r"name_expressions\[0\] must be a str, not NoneType"),
    (lambda c: c.explain(KERNEL, options=[b"-O3"]), r"options\[0\] must be a str, not bytes"),
    (lambda c: c.blob_get(b"tool", "name"), "namespace must be a str, not bytes"),
    (lambda c: c.blob_put("tool", 7, b"x"), "name must be a str, not int"),
    (lambda c: c.blob_put("tool", "name", "text"), "payload must be bytes, not str"),
])
def test_wrong_argument_types_raise_type_error_saying_what_is_expected(cache, call, message):
    with pytest.raises(TypeError, match=message):
        call(cache)
    assert cache.stats()["compiles"] == 0


@pytest.mark.parametrize("call, what", [
    (lambda c: c.compile(KERNEL + "\0garbage"), "source"),
    (lambda c: c.compile(KERNEL, ["ns::scale<float, 256>\0x"]), r"name_expressions\[0\]"),
    (lambda c: c.compile(KERNEL, options=["-std=c++17", "-O3\0-G"]), r"options\[1\]"),
    (lambda c: c.compile(KERNEL, arch="sm_90\0x"), "arch"),
    (lambda c: c.compile(KERNEL, program_name="k.cu\0x"), "program_name"),
    (lambda c: c.key(KERNEL + "\0x"), "source"),
    (lambda c: c.explain(KERNEL + "\0x"), "source"),
    (lambda c: c.blob_get("tool", "na\0me"), "name"),
    (lambda c: c.blob_put("to\0ol", "name", b"x"), "namespace"),
    (lambda c: cubby.Cache(c.dir + "\0other"), "dir"),
])
def test_a_nul_inside_a_string_is_rejected_not_truncated(cache, call, what):
    with pytest.raises(ValueError, match=what + " contains a NUL"):
        call(cache)
    assert cache.stats()["compiles"] == 0 and cache.usage() == (0, 0)


def test_close_while_other_threads_compile(tmp_path, env):
    """close() waits for the calls in flight on other threads (their results are whole), and every
    call begun after it raises cubby.Error saying the cache is closed (the C API's handle was a
    use-after-free before)."""
    cache = cubby.Cache(tmp_path / "store")
    threads_count = 4
    first_calls = threading.Semaphore(0)
    closed = threading.Event()
    outcomes = [[] for _ in range(threads_count)]

    # Each thread calls until it meets the close (a fixed number of rounds let the fast key()
    # threads finish before the compiling threads' first call returned, never meeting it), bounded
    # by time so that a close that never comes fails the test instead of hanging it.
    deadline = time.monotonic() + 120

    def work(index: int) -> None:
        round_ = -1
        while time.monotonic() < deadline:
            round_ += 1
            after_close = closed.is_set()
            try:
                if index % 2 == 0:  # a new program each time: a real compile in flight
                    source = KERNEL + f"// {index}.{round_}\n"
                    result = cache.compile(source, NAMES, arch="sm_90")
                    assert result.cubin[:4] == b"\x7fELF"
                    assert set(result.lowered_names) == set(NAMES)
                else:
                    assert len(cache.key(KERNEL, NAMES, arch="sm_90")) == 32
                outcomes[index].append("after close" if after_close else "ok")
            except cubby.Error as error:
                outcomes[index].append("closed" if "closed" in str(error) else str(error))
                return
            finally:
                if round_ == 0:
                    first_calls.release()
            if after_close:
                return
        outcomes[index].append("no close within 120 s")

    threads = [threading.Thread(target=work, args=(index,)) for index in range(threads_count)]
    for thread in threads:
        thread.start()
    for _ in threads:
        first_calls.acquire()
    cache.close()
    closed.set()
    for thread in threads:
        thread.join()
    for outcome in outcomes:  # calls that succeeded, then one that said "closed"
        assert outcome and outcome[-1] == "closed" and set(outcome[:-1]) == {"ok"}, outcome
    with pytest.raises(cubby.Error, match="closed"):
        cache.compile(KERNEL, NAMES, arch="sm_90")
    assert cache.dir == str(tmp_path / "store") and "closed" in repr(cache)


def test_a_closed_cache_says_so(tmp_path, env):
    handle = cubby.Cache(tmp_path)
    handle.close()
    handle.close()  # twice is fine
    with pytest.raises(cubby.Error, match="closed"):
        handle.stats()


def test_default_dir_follows_cubby_dir(tmp_path, env):
    env.setenv("CUBBY_DIR", str(tmp_path / "from-env"))
    with cubby.Cache() as handle:
        assert handle.dir == str(tmp_path / "from-env")


def test_the_library_version_and_path(env):
    assert cubby.version().count(".") == 2
    assert "libcubby" in cubby.library_path()


def test_prefetch_of_a_suite_never_recorded_starts_nothing_and_says_nothing(tmp_path):
    import cubby

    with cubby.Prefetch("never recorded", str(tmp_path / "store")) as prefetch:
        assert prefetch.pid == 0
        assert prefetch.note == ""
    with pytest.raises(cubby.Error, match="suite"):
        cubby.Prefetch("")


def test_read_ahead_serves_a_suites_recorded_entries_from_memory_and_stops_when_asked(
        tmp_path, env):
    env.setenv("CUBBY_SUITE", "s")
    kernels = [KERNEL.replace("scale", f"scale{n}") for n in range(2)]
    names = [[name.replace("scale", f"scale{n}") for name in NAMES] for n in range(2)]
    with cubby.Cache(tmp_path / "store") as cache:  # records the suite's two recipes
        assert cache.read_ahead() == cubby.ReadAhead(0, 0)  # nothing recorded yet
        for kernel, expressions in zip(kernels, names):
            cache.compile(kernel, expressions, ["-std=c++17"], "sm_90")
    with cubby.Cache(tmp_path / "store") as cache:
        read = {}
        thread = threading.Thread(target=lambda: read.update(count=cache.read_ahead()))
        thread.start()
        thread.join(60)
        assert read == {"count": cubby.ReadAhead(read=2, lacking=0)}
        tiers = [cache.compile(kernel, expressions, ["-std=c++17"], "sm_90").tier
                 for kernel, expressions in zip(kernels, names)]
        assert tiers == ["memory", "memory"]
        assert (cache.stats()["hits_memory"], cache.stats()["hits_disk"]) == (2, 0)
    with cubby.Cache(tmp_path / "store") as cache:
        cache.stop_read_ahead()
        assert cache.read_ahead() == cubby.ReadAhead(0, 2)  # not looked at: may be missing
        assert cache.compile(kernels[0], names[0], ["-std=c++17"], "sm_90").tier == "disk"


def test_a_prefetch_at_first_miss_waits_for_a_miss_of_its_suite_then_compiles(tmp_path, env):
    store, include = tmp_path / "store", tmp_path / "include"
    include.mkdir()
    (include / "v.cuh").write_text("constexpr int kV = 1;\n")
    env.setenv("CUBBY_SUITE", "s")
    kernels = ['#include "v.cuh"\n' + KERNEL.replace("scale", f"scale{n}") for n in range(3)]
    names = [[name.replace("scale", f"scale{n}") for name in NAMES] for n in range(3)]
    options = ["-std=c++17", f"-I{include}"]
    with cubby.Cache(store) as cache:  # records the suite's three recipes
        for kernel, expressions in zip(kernels, names):
            cache.compile(kernel, expressions, options, "sm_90")
    (include / "v.cuh").write_text("constexpr int kV = 2;\n")  # every key changed
    # ... by an edit that keeps an old time (a copy with its time): only a miss shows it (an edit
    # with a new time starts the prefetch at once: tests/core/warm/test_prefetch.cpp).
    os.utime(include / "v.cuh", (time.time() - 7200, time.time() - 7200))
    for miss_file in (store / "manifests").glob("*.miss-*"):  # the recording's misses: old news
        os.utime(miss_file, (time.time() - 3600, time.time() - 3600))

    def entries() -> int:
        return len(list((store / "entries").rglob("*.entry")))

    with cubby.Prefetch("s", str(store), at_first_miss=True) as prefetch:
        assert prefetch.pid
        deadline = time.time() + 30
        while time.time() < deadline:  # empty while the tool is being executed
            with open(f"/proc/{prefetch.pid}/cmdline", "rb") as cmdline:
                args = cmdline.read().split(b"\0")
            if args != [b""]:
                break
            time.sleep(0.02)
        assert b"--after-miss" in args
        time.sleep(1.0)
        assert entries() == 3  # the last run's: nothing compiled without a miss
        with cubby.Cache(store) as cache:  # the run misses its last kernel
            assert not cache.compile(kernels[2], names[2], options, "sm_90").hit
        deadline = time.time() + 120
        while time.time() < deadline and entries() < 6:
            time.sleep(0.05)
        assert entries() == 6


def test_reprs_are_one_short_line_without_the_payload(cache):
    result = cache.compile(KERNEL, NAMES, ["-std=c++17"], "sm_90")
    text = repr(result)
    assert "\n" not in text and len(text) < 250, text
    assert f"key={result.key!r}" in text and "tier='compiled'" in text and "hit=False" in text
    assert f"cubin={len(result.cubin)} bytes" in text and "lowered_names=2 names" in text
    assert "ELF" not in text and "_ZN2ns" not in text  # neither the CUBIN nor the names
    request = cubby.Request(KERNEL, tuple(NAMES), ("-std=c++17",), "sm_90", None)
    assert repr(request) == (f"cubby.Request(source=<{len(KERNEL)} characters>, "
                             "name_expressions=2 names, options=['-std=c++17'], arch='sm_90', "
                             "program_name=None)")
    with cubby.Prefetch("never recorded", cache.dir) as prefetch:
        assert repr(prefetch) == "cubby.Prefetch(nothing to prefetch)"


def test_lowered_name_of_one_expression_as_in_the_cpp_api(cache):
    result = cache.compile(KERNEL, NAMES, ["-std=c++17"], "sm_90")
    for name in NAMES:
        assert result.lowered_name(name) == result.lowered_names[name]
    with pytest.raises(KeyError, match="not a name expression of this compile"):
        result.lowered_name("ns::scale<double, 1>")


def test_a_store_path_under_a_regular_file_names_the_file(tmp_path):
    # Issue 36 item 6: CUBBY_DIR=afile/sub compiles (nothing is cached) and the warning names the
    # file in the way, with no advice about a cubby.conf that does not exist. A fresh process:
    # the warning is said once per process.
    import subprocess
    import sys

    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    code = ("import sys, cubby\n"
            "with cubby.Cache() as cache:\n"
            "    print(cache.compile(sys.argv[1], ['ns::scale<float, 2>'], ['-std=c++17'],"
            " 'sm_90').tier)\n")
    env = {**os.environ, "CUBBY_DIR": str(afile / "sub"), "PYTHONPATH": str(SRC)}
    run = subprocess.run([sys.executable, "-c", code, KERNEL], capture_output=True, text=True,
                         env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["compiled"]
    assert f"cannot be made: {afile} is a file, not a folder" in run.stderr, run.stderr
    assert "cubby.conf" not in run.stderr
    assert afile.read_text() == "mine\n"
