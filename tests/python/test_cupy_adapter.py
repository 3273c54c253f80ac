"""The CuPy adapter (pytest_plugin/src/cubby/cupy_adapter.py) against a fake cupy.cuda.compiler
that follows CuPy 14's compile path: _compile_with_cache_cuda's flow (CuPy's name, its kernel-cache
backend, then ``_NVRTCProgram(src, name, headers, include_names, name_expressions,
method).compile(options, log_stream) -> (payload, mapping)``). With ``_NVRTCProgram`` present the
adapter routes the compile through cubby (real NVRTC, no GPU needed); without it (a CuPy whose
internals moved) it takes the blob path."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CLI, needs_library

pytestmark = needs_library

FAKE_COMPILER = '''
import hashlib, os, tempfile

PROGRAM = "{program}"  # "_NVRTCProgram" as in CuPy 14; another name stands for moved internals

class CompileException(Exception):
    def __init__(self, msg, source, name, options, backend="nvrtc"):
        super().__init__(msg)
        self._msg, self.source, self.name, self.options, self.backend = (
            msg, source, name, options, backend)

class _DiskBackend:
    # Stands in for CuPy's own backend: payloads under CuPy's names, which hash the source and
    # options, not the headers. Records every call so tests can see it was bypassed.
    calls = []
    stored = {{}}
    def load(self, name):
        self.calls.append(("load", name))
        return self.stored.get(name)
    def save(self, name, cubin, source):
        self.calls.append(("save", name))
        self.stored[name] = cubin

_kernel_cache_backend = _DiskBackend()
compiled = []

def _set_kernel_cache_backend(backend):
    global _kernel_cache_backend
    _kernel_cache_backend = backend

def _get_nvrtc_version():
    version = os.environ.get("FAKE_CUPY_NVRTC_VERSION")
    if not version:
        raise RuntimeError("the fake CuPy has no NVRTC")
    return tuple(int(part) for part in version.split("."))

def payload_for(source):
    # What CuPy's own "compile" of `source` produces here: every byte value.
    return bytes(range(256)) + b"\\x00cubin:" + source.encode()

class _Program:
    # CuPy 14's cupy.cuda.compiler._NVRTCProgram: its constructor and compile() signatures.
    def __init__(self, src, name="default_program", headers=(), include_names=(),
                 name_expressions=None, method="ptx"):
        self.ptr = 1
        self.src, self.name, self.name_expressions, self.method = (
            src, name, name_expressions, method)
    def compile(self, options=(), log_stream=None):
        compiled.append(self.name)
        if "#error" in self.src:
            raise CompileException("kern.cu(1): error: fake", self.src, self.name, options)
        mapping = ({{n: "_Z" + n for n in self.name_expressions}}
                   if self.name_expressions else None)
        return payload_for(self.src), mapping

globals()[PROGRAM] = _Program

def cupy_name(source, options=(), name_expressions=None):
    text = repr((source, tuple(options), sorted(name_expressions or ())))
    return hashlib.sha1(text.encode()).hexdigest() + ".cubin"

temp_folders = []  # every temporary folder _compile_using_nvrtc_no_warning made

def _compile_using_nvrtc_no_warning(source, options=(), arch=None, filename="kern.cu",
                                    name_expressions=None, log_stream=None,
                                    cache_in_memory=False, jitify=None, method=None):
    # CuPy 14's: the source is written into a temporary folder that is deleted before NVRTC runs
    # (the program only gets its name); in memory, no folder and an empty name.
    if not cache_in_memory:
        with tempfile.TemporaryDirectory() as root:
            path = os.path.join(root, filename)
            with open(path, "w") as stream:
                stream.write(source)
        temp_folders.append(root)
    else:
        path = "" if not jitify else filename
    headers = ("jitify-header",) if jitify else ()
    program = globals()[PROGRAM](source, path, headers, headers, name_expressions, method)
    return program.compile(options + (arch, "--device-as-default-execution-space"))

nvcc_compiled = []  # every file name compile_using_nvcc compiled

def compile_using_nvcc(source, options=(), arch=None, filename="kern.cu", code_type="cubin",
                       separate_compilation=False, log_stream=None):
    # CuPy 14's signature; "compiles" what the source's headers hold too (header-exact tests).
    nvcc_compiled.append(filename)
    headers = b""
    for option in options:
        if option.startswith("-I") and os.path.isdir(option[2:]):
            for entry in sorted(os.listdir(option[2:])):
                with open(os.path.join(option[2:], entry), "rb") as stream:
                    headers += stream.read()
    return payload_for("nvcc:" + source) + headers

def compile_with_cache(source, options=(), name_expressions=None, jitify=False,
                       method="cubin", cache_in_memory=False, backend="nvrtc"):
    # _compile_with_cache_cuda's flow: CuPy's name, its backend, else a program compiled with
    # the final options (the architecture last), then saved under the name.
    options = tuple(options) + ("-ftz=true",)
    name = cupy_name(source, options, name_expressions)
    payload = None if cache_in_memory else _kernel_cache_backend.load(name)
    if payload is not None:
        return payload, None
    if backend == "nvcc":
        payload = compile_using_nvcc(source, options, "90", name + ".cu")
        _kernel_cache_backend.save(name, payload, source)
        return payload, None
    arch = "-arch=sm_90" if method == "cubin" else "-arch=compute_90"
    payload, mapping = _compile_using_nvrtc_no_warning(
        source, options, arch, name + ".cu", name_expressions, None, cache_in_memory, jitify,
        method)
    if not cache_in_memory:
        _kernel_cache_backend.save(name, payload, source)
    return payload, mapping
'''

SUITE = '''
import pytest
from cupy.cuda import compiler

@pytest.mark.parametrize("index", range(3))
def test_kernel(index):
    source = "__global__ void k%d() {{}}" % index
    assert compiler.compile_with_cache(source)[0] == compiler.payload_for(source)

def test_zz_cupy_backend_was_bypassed():
    expected = "_DiskBackend" if {expect_default} else "CubbyKernelCacheBackend"
    assert type(compiler._kernel_cache_backend).__name__ == expected
    assert bool(compiler._DiskBackend.calls) == {expect_default}
'''


@pytest.fixture
def fake_cupy(pytester):
    def make(version="14.0.0", program="_Program"):
        pytester.mkpydir("cupy").joinpath("__init__.py").write_text(f"__version__ = {version!r}\n")
        cuda = pytester.path / "cupy" / "cuda"
        cuda.mkdir()
        (cuda / "__init__.py").write_text("")
        (cuda / "compiler.py").write_text(FAKE_COMPILER.format(program=program))
        pytester.syspathinsert()
    return make


def cupy_line(result) -> str:
    match = re.search(r"^cupy: .*$", result.stdout.str(), re.M)
    assert match, result.stdout.str()
    return match.group(0)


def test_a_cupy_whose_internals_moved_gets_the_blob_path_byte_for_byte(pytester, run, env, store,
                                                                      fake_cupy):
    fake_cupy()
    env.setenv("PYTHONPATH", f"{pytester.path}:{__import__('os').environ['PYTHONPATH']}")
    pytester.makepyfile(test_suite=SUITE.format(expect_default=False))
    cold = run(f"--cubby-dir={store}")
    cold.assert_outcomes(passed=4)
    assert ("blob path (CuPy 14.0.0: cupy.cuda.compiler._NVRTCProgram is gone; namespace 'cupy')"
            in cupy_line(cold))
    assert cold.stdout.str().count("cubby: CuPy 14.0.0: cupy.cuda.compiler._NVRTCProgram") == 1
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


WARM_UP_PROBE = """
import sys

def _plugin(config):
    return config.pluginmanager.get_plugin("cubby-session")

def pytest_collection(session):  # before any test module is imported
    plugin = _plugin(session.config)
    print(f"before collection: cupy imported {'cupy' in sys.modules}, "
          f"warm-up {plugin.cupy_warm_up is not None}")

def pytest_collection_finish(session):  # this conftest's hook runs before the plugin's
    print(f"collected: warm-up {_plugin(session.config).cupy_warm_up is not None}")
"""


@pytest.mark.parametrize("configured", [True, False])
def test_the_first_keys_work_starts_before_cupy_is_installed(pytester, run, env, store,
                                                             fake_cupy, configured):
    # Configured: from activation, before collection imports CuPy. Not configured: once a
    # collected module imported CuPy, before the session activates at the end of collection.
    fake_cupy()
    env.setenv("PYTHONPATH", f"{pytester.path}:{__import__('os').environ['PYTHONPATH']}")
    pytester.makeconftest(WARM_UP_PROBE)
    pytester.makepyfile(test_suite=SUITE.format(expect_default=False))
    result = run("-s", *([f"--cubby-dir={store}"] if configured else []))
    result.assert_outcomes(passed=4)
    out = result.stdout.str()
    assert f"before collection: cupy imported False, warm-up {configured}" in out, out
    assert "collected: warm-up True" in out, out
    assert "loads hit 0, missed 3, saved 3" in cupy_line(result)


LIBRARY_PROBE = """
def pytest_sessionfinish(session):
    from cubby import _library
    print(f"\\nlibcubby loaded: {_library._lib is not None}")
"""


def test_an_unconfigured_session_importing_an_older_cupy_loads_no_libcubby(pytester, run, env,
                                                                         fake_cupy):
    fake_cupy(version="13.6.0")
    env.setenv("PYTHONPATH", f"{pytester.path}:{__import__('os').environ['PYTHONPATH']}")
    pytester.makeconftest(LIBRARY_PROBE)
    pytester.makepyfile(test_suite=SUITE.format(expect_default=True))
    result = run("-s")
    result.assert_outcomes(passed=4)
    assert "libcubby loaded: False" in result.stdout.str(), result.stdout.str()


XDIST_WARM_UP_PROBE = """
import sys

def pytest_sessionfinish(session):
    # By workerinput, not PYTEST_XDIST_WORKER: this controller inherits that from an outer xdist
    # worker when the project's own tests run under -n.
    worker = getattr(session.config, "workerinput", None)
    role = worker["workerid"] if worker else "controller"
    plugin = session.config.pluginmanager.get_plugin("cubby-session")
    sys.stderr.write(f"\\n{role}: warm-up {plugin.cupy_warm_up is not None}\\n")
"""


def test_an_xdist_controller_starts_no_warm_up_and_its_workers_do(pytester, run, env, store,
                                                                  fake_cupy):
    pytest.importorskip("xdist")
    fake_cupy()
    env.setenv("PYTHONPATH", f"{pytester.path}:{__import__('os').environ['PYTHONPATH']}")
    pytester.makeconftest(XDIST_WARM_UP_PROBE)
    pytester.makepyfile(test_suite=SUITE.format(expect_default=False))
    result = run("-p", "xdist.plugin", "-n", "2", f"--cubby-dir={store}")
    result.assert_outcomes(passed=4)
    err = result.stderr.str()
    assert "controller: warm-up False" in err, err
    assert err.count(": warm-up True") == 2 and "gw0: warm-up True" in err, err


# ---- CuPy compiles through cubby (the fake has CuPy 14's _NVRTCProgram) ---------------------

@pytest.fixture
def cupy_compiler(tmp_path, monkeypatch):
    """The fake CuPy 14 imported in this process (its compiler module is returned), with cubby's
    NVRTC version as its own; sys.modules is put back afterwards."""
    package = tmp_path / "fake" / "cupy"
    (package / "cuda").mkdir(parents=True)
    (package / "__init__.py").write_text("__version__ = '14.2.0'\n")
    (package / "cuda" / "__init__.py").write_text("")
    (package / "cuda" / "compiler.py").write_text(FAKE_COMPILER.format(program="_NVRTCProgram"))
    monkeypatch.syspath_prepend(str(tmp_path / "fake"))
    for name in ("cupy", "cupy.cuda", "cupy.cuda.compiler"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setenv("CUBBY_ARCH", "sm_90")
    import importlib

    compiler = importlib.import_module("cupy.cuda.compiler")
    yield compiler
    for name in ("cupy", "cupy.cuda", "cupy.cuda.compiler"):
        sys.modules.pop(name, None)


@pytest.fixture
def through_cubby(cupy_compiler, tmp_path):
    """install(cache) -> Installed, uninstalled and closed at the end; each call is a new handle
    on one store (a new process, as far as the memory tier goes)."""
    import cubby
    from cubby import cupy_adapter

    opened = []

    def install():
        cache = cubby.Cache(tmp_path / "store")
        installed = cupy_adapter.install(cache)
        opened.append((cache, installed))
        return installed

    yield install
    for cache, installed in reversed(opened):
        installed.uninstall()
        cache.close()


VALUE_SOURCE = '#include "{header}"\n__device__ int value = VALUE;\n' \
               'extern "C" __global__ void k(int* out) {{ *out = value; }}\n'


def holds(cubin: bytes, value: int) -> bool:
    return value.to_bytes(4, "little") in cubin


def compile_again(through_cubby, compiler, *args, **kwargs):
    """compile_with_cache in a "new process": a new cubby handle, CuPy's adapter installed on it."""
    installed = through_cubby()
    payload, mapping = compiler.compile_with_cache(*args, **kwargs)
    installed.uninstall()
    return payload, mapping


@pytest.mark.parametrize("where", ["-I folder", "next to the program", "CuPy header"])
def test_a_header_edit_is_never_served_stale_where_cupys_own_name_stays_the_same(
        cupy_compiler, through_cubby, tmp_path, monkeypatch, where):
    if where == "-I folder":
        folder = tmp_path / "include"
        options, in_memory = (f"-I{folder}",), False
    elif where == "CuPy header":  # CuPy's own headers, reached through its -I option
        folder = Path(cupy_compiler.__file__).parent.parent / "_core" / "include" / "cupy"
        options, in_memory = (f"-I{folder.parent}",), False
    else:  # CUPY_CACHE_IN_MEMORY: program name "", so its folder is the working folder
        folder = tmp_path / "work"
        options, in_memory = (), True
        monkeypatch.chdir(tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    header = "cupy/val.cuh" if where == "CuPy header" else (
        "work/val.cuh" if in_memory else "val.cuh")
    (folder / "val.cuh").write_text("#define VALUE 0x11223344\n")
    source = VALUE_SOURCE.format(header=header)
    before, _ = compile_again(through_cubby, cupy_compiler, source, options,
                              cache_in_memory=in_memory)
    assert holds(before, 0x11223344) and before[:4] == b"\x7fELF"
    (folder / "val.cuh").write_text("#define VALUE 0x55667788\n")
    after, _ = compile_again(through_cubby, cupy_compiler, source, options,
                             cache_in_memory=in_memory)
    assert holds(after, 0x55667788) and not holds(after, 0x11223344), "a stale kernel"
    assert not cupy_compiler._DiskBackend.calls, "CuPy's own cache was asked"


def test_an_edit_recompiles_only_the_kernels_whose_sources_include_the_header(
        cupy_compiler, through_cubby, tmp_path):
    folder = tmp_path / "include"
    folder.mkdir()
    (folder / "a.cuh").write_text("#define VALUE 0x0a0a0a0a\n")
    (folder / "b.cuh").write_text("#define VALUE 0x0b0b0b0b\n")
    sources = [VALUE_SOURCE.format(header=h) for h in ("a.cuh", "b.cuh")]
    first = through_cubby()
    for source in sources:
        cupy_compiler.compile_with_cache(source, (f"-I{folder}",))
    first.uninstall()
    (folder / "a.cuh").write_text("#define VALUE 0x0c0c0c0c\n")
    second = through_cubby()
    a, _ = cupy_compiler.compile_with_cache(sources[0], (f"-I{folder}",))
    b, _ = cupy_compiler.compile_with_cache(sources[1], (f"-I{folder}",))
    assert holds(a, 0x0c0c0c0c) and holds(b, 0x0b0b0b0b)
    stats = second.router.cache.stats()
    assert stats["compiles"] == 1 and stats["hits_disk"] == 1, stats


def test_the_payload_and_name_mapping_are_what_nvrtc_gave_and_a_hit_gives_the_same(
        cupy_compiler, through_cubby, tmp_path):
    source = ("namespace ns {\ntemplate <class T> __global__ void k(T* p) { *p = T(1); }\n}\n")
    names = ["ns::k<float>", "ns::k<int>"]
    first = through_cubby()
    cubin, mapping = cupy_compiler.compile_with_cache(source, ("-std=c++17",), names)
    assert first.counters() == {"cupy_served": 0, "cupy_compiled": 1, "cupy_uncached": 0}
    assert set(mapping) == set(names)
    assert mapping["ns::k<float>"] == "_ZN2ns1kIfEEvPT_"
    assert mapping["ns::k<int>"] == "_ZN2ns1kIiEEvPT_"
    # CuPy's own getCUBIN returns NVRTC's CUBIN without its last byte: the adapter gives the same.
    import cubby
    from cubby import cupy_adapter

    with cubby.Cache(tmp_path / "direct") as direct:
        options = ("-std=c++17", "-ftz=true")  # the fake's final options, as CuPy's
        name = cupy_compiler.cupy_name(source, options, names)
        rest, arch = cupy_adapter.split_arch(
            options + ("-arch=sm_90", "--device-as-default-execution-space"))
        program = cupy_adapter.stable_program_name(f"/tmp/cupy-deleted-folder/{name}.cu")
        nvrtc = direct.compile(source, names, rest, arch, program).cubin
    assert cubin == nvrtc[:-1]
    first.uninstall()
    again, again_mapping = compile_again(through_cubby, cupy_compiler, source, ("-std=c++17",),
                                         names)
    assert again == cubin and again_mapping == mapping


def test_ptx_programs_go_through_cubby_and_jitify_ones_are_stored_as_cupy_compiles_them(
        cupy_compiler, through_cubby):
    installed = through_cubby()
    ptx, _ = cupy_compiler.compile_with_cache('extern "C" __global__ void k() {}', method="ptx")
    assert b".entry k" in ptx
    payload, _ = cupy_compiler.compile_with_cache("__global__ void j() {}", jitify=True)
    assert payload == cupy_compiler.payload_for("__global__ void j() {}")
    assert installed.counters() == {"cupy_served": 0, "cupy_compiled": 2, "cupy_uncached": 0}
    stats = installed.router.cache.stats()
    assert stats["uncached_compiled_elsewhere"] == 0, stats
    installed.uninstall()
    # The next process: CuPy's jitify program is served by the store, not compiled again.
    compiled = len(cupy_compiler.compiled)
    again = through_cubby()
    payload, _ = cupy_compiler.compile_with_cache("__global__ void j() {}", jitify=True)
    assert payload == cupy_compiler.payload_for("__global__ void j() {}")
    assert len(cupy_compiler.compiled) == compiled
    assert again.counters() == {"cupy_served": 1, "cupy_compiled": 0, "cupy_uncached": 0}


def test_cupys_nvcc_programs_are_stored_and_an_edited_header_compiles_them_again(
        cupy_compiler, through_cubby, tmp_path):
    """cupyx.jit's thrust kernels (backend='nvcc') were compiled in every warm run: CuPy's own
    cache is a pass-through while cubby serves CuPy. They are stored under CuPy's name and
    cubby's key of their headers."""
    folder = tmp_path / "include"
    folder.mkdir()
    (folder / "val.cuh").write_text("#define VALUE 0x0a0a0a0a\n")
    source = '#include "val.cuh"\n__global__ void t() {}\n'
    options = (f"-I{folder}", "--std=c++17", "-DCUPY_JIT_NVCC")
    first = through_cubby()
    saved = []
    from cubby import cupy_adapter

    cupy_adapter._save_observers.append(saved.append)
    try:
        payload, _ = cupy_compiler.compile_with_cache(source, options, backend="nvcc")
    finally:
        cupy_adapter._save_observers.remove(saved.append)
    assert b"0x0a0a0a0a" in payload and len(cupy_compiler.nvcc_compiled) == 1
    assert len(saved) == 1 and saved[0].startswith("own-nvcc-cubin-"), saved  # require-warm
    assert first.counters()["cupy_compiled"] == 1
    first.uninstall()
    again = through_cubby()
    assert cupy_compiler.compile_with_cache(source, options, backend="nvcc")[0] == payload
    assert len(cupy_compiler.nvcc_compiled) == 1, "a stored nvcc program was compiled again"
    assert again.counters()["cupy_served"] == 1
    again.uninstall()
    (folder / "val.cuh").write_text("#define VALUE 0x0b0b0b0b\n")  # CuPy's name stays the same
    edited, _ = compile_again(through_cubby, cupy_compiler, source, options, backend="nvcc")
    assert b"0x0b0b0b0b" in edited and len(cupy_compiler.nvcc_compiled) == 2, "a stale kernel"
    assert not cupy_compiler._DiskBackend.calls, "CuPy's own cache was asked"


@pytest.fixture
def own_way_names(monkeypatch):
    """The blob names _cupy_own_way.OwnWayStore.name_of gives in the test, in order."""
    from cubby import _cupy_own_way

    original = _cupy_own_way.OwnWayStore.name_of
    names = []

    def name_of(self, *args, **kwargs):
        name = original(self, *args, **kwargs)
        names.append(name)
        return name

    monkeypatch.setattr(_cupy_own_way.OwnWayStore, "name_of", name_of)
    return names


def test_a_stored_own_way_program_that_is_not_one_is_compiled_again_and_replaced(
        cupy_compiler, through_cubby, own_way_names):
    from cubby import cupy_adapter

    installed = through_cubby()
    cupy_compiler.compile_with_cache("__global__ void g() {}", backend="nvcc")
    assert len(own_way_names) == 1 and own_way_names[0].startswith("own-nvcc-cubin-")
    installed.router.cache.blob_put(cupy_adapter.NAMESPACE, own_way_names[0],
                                    b"garbage without a mapping line")
    installed.uninstall()
    again = through_cubby()
    payload, _ = cupy_compiler.compile_with_cache("__global__ void g() {}", backend="nvcc")
    assert payload == cupy_compiler.payload_for("nvcc:__global__ void g() {}")
    assert len(cupy_compiler.nvcc_compiled) == 2
    assert again.counters()["cupy_compiled"] == 1


def test_a_stored_jitify_program_whose_mapping_lacks_a_name_is_compiled_again(
        cupy_compiler, through_cubby, own_way_names):
    """A blob is another user's bytes in a shared store: one whose mapping lacks a name
    expression would fail CuPy's get_function, so it counts as none stored."""
    from cubby import _cupy_own_way, cupy_adapter

    installed = through_cubby()
    source = "template <int N> __global__ void j() {}"
    _, mapping = cupy_compiler.compile_with_cache(source, name_expressions=["j<1>"], jitify=True)
    assert mapping == {"j<1>": "_Zj<1>"} and len(own_way_names) == 1
    installed.router.cache.blob_put(cupy_adapter.NAMESPACE, own_way_names[0],
                                    _cupy_own_way.encode(b"payload", {}))
    installed.uninstall()
    compiled = len(cupy_compiler.compiled)
    again = through_cubby()
    _, mapping = cupy_compiler.compile_with_cache(source, name_expressions=["j<1>"], jitify=True)
    assert mapping == {"j<1>": "_Zj<1>"}
    assert len(cupy_compiler.compiled) == compiled + 1
    assert again.counters()["cupy_compiled"] == 1


def test_an_own_way_blob_round_trips_and_garbage_is_refused():
    from cubby._cupy_own_way import decode, encode

    assert decode(encode(b"\x00cubin\n", {"k<1>": "_Z1kILi1EEvv"})) == (
        b"\x00cubin\n", {"k<1>": "_Z1kILi1EEvv"})
    assert decode(encode(b"ptx", None)) == (b"ptx", None)
    for garbage in (b"", b"no newline", b"{\"a\": 1}\nx", b"[1]\nx", b"null\n", b"\xff\nx"):
        assert decode(garbage) is None, garbage


def test_a_compile_error_raises_cupys_compile_exception_with_nvrtcs_log(
        cupy_compiler, through_cubby):
    installed = through_cubby()
    with pytest.raises(cupy_compiler.CompileException) as caught:
        cupy_compiler.compile_with_cache("__global__ void k() { undefined_thing(); }")
    assert "undefined_thing" in str(caught.value) and "error" in str(caught.value)
    assert caught.value.source.startswith("__global__")
    assert installed.router.cache.stats()["compiles"] == 0


def test_a_cupy_whose_nvrtc_is_not_cubbys_gets_the_blob_path(cupy_compiler, through_cubby,
                                                             monkeypatch):
    # Found at the first program (the install does not wait for cubby's NVRTC): that program is
    # CuPy's compile, saved on the blob path, and served from it by the next process.
    monkeypatch.setenv("FAKE_CUPY_NVRTC_VERSION", "1.0")
    installed = through_cubby()
    assert installed.mode == "compile"
    source = "__global__ void k() {}"
    payload, _ = cupy_compiler.compile_with_cache(source)
    assert payload == cupy_compiler.payload_for(source)
    assert installed.mode == "blob"
    assert installed.note.startswith("CuPy's NVRTC is 1.0, cubby's is ")
    assert type(cupy_compiler._kernel_cache_backend).__name__ == "CubbyKernelCacheBackend"
    assert cupy_compiler._NVRTCProgram.__name__ == "_Program"  # CuPy's own class back
    assert installed.counters()["cupy_saves"] == 1
    installed.uninstall()
    again = through_cubby()
    assert cupy_compiler.compile_with_cache(source)[0] == payload
    assert again.mode == "blob" and again.counters()["cupy_hits"] == 1


def test_the_install_does_not_wait_for_cubbys_nvrtc_and_the_first_program_asks_once(
        cupy_compiler, tmp_path, monkeypatch):
    import cubby
    from cubby import cupy_adapter

    asked = []
    with cubby.Cache(tmp_path / "store") as cache:
        explain = cache.explain
        monkeypatch.setattr(cache, "explain", lambda *a, **k: asked.append(a) or explain(*a, **k))
        installed = cupy_adapter.install(cache)
        try:
            assert asked == [] and installed.mode == "compile"
            for index in range(2):
                source = f"__global__ void k{index}() {{}}"
                assert cupy_compiler.compile_with_cache(source)[0].startswith(b"\x7fELF")
            assert len(asked) == 1 and installed.mode == "compile"
            assert installed.counters()["cupy_compiled"] == 2
        finally:
            installed.uninstall()


def test_uninstall_puts_cupys_program_class_and_backend_back(cupy_compiler, through_cubby):
    program, backend = cupy_compiler._NVRTCProgram, cupy_compiler._kernel_cache_backend
    installed = through_cubby()
    assert installed.mode == "compile"
    assert cupy_compiler._NVRTCProgram is not program
    installed.uninstall()
    assert cupy_compiler._NVRTCProgram is program
    assert cupy_compiler._kernel_cache_backend is backend


def test_warm_up_asks_the_first_keys_work_in_another_thread_and_never_raises():
    import threading

    from cubby import Error, cupy_adapter

    calls = []

    class Recording:
        def explain(self, source, arch=None):
            calls.append((source, arch, threading.current_thread() is threading.main_thread()))
            raise Error("no NVRTC here")

    thread = cupy_adapter.warm_up(Recording())
    thread.join(10)
    assert not thread.is_alive()
    assert calls == [("", "sm_90", False)]


def test_through_cubby_cupy_writes_no_temporary_source_and_keys_stay_the_same(cupy_compiler,
                                                                              through_cubby):
    from cubby.cupy_adapter import ABSENT_PROGRAM_DIR

    wrapped = cupy_compiler._compile_using_nvrtc_no_warning
    source = 'extern "C" __global__ void k(int* out) { *out = 1; }'
    installed = through_cubby()
    assert cupy_compiler._compile_using_nvrtc_no_warning is not wrapped
    cupy_compiler.compile_with_cache(source)
    assert cupy_compiler.temp_folders == []  # CuPy's folder for a deleted file: not made
    name = cupy_compiler.cupy_name(source, ("-ftz=true",))
    # Served under the key CuPy's temporary name gave (a program beside a folder that is gone).
    options = ["-ftz=true", "--device-as-default-execution-space"]
    assert installed.router.cache.compile(source, options=options, arch="sm_90",
                                          program_name=f"{ABSENT_PROGRAM_DIR}/{name}.cu").hit
    # Jitify compiles go CuPy's way as they did (their name is read).
    cupy_compiler.compile_with_cache("__global__ void j() {}", jitify=True)
    assert len(cupy_compiler.temp_folders) == 1
    installed.uninstall()
    assert cupy_compiler._compile_using_nvrtc_no_warning is wrapped
    cupy_compiler.compile_with_cache(source + " ")
    assert len(cupy_compiler.temp_folders) == 2


CUPY_SUITE = '''
import os
from cupy.cuda import compiler

SOURCE = '#include "val.cuh"\\n__device__ int value = VALUE;\\n' \\
         'template <int N> __global__ void k(int* out) {{ *out = value + N; }}\\n'
INCLUDE = "-I" + os.path.join(os.path.dirname(__file__), "include")

def test_kernels():
    for n in range(3):
        cubin, mapping = compiler.compile_with_cache(SOURCE, (INCLUDE,), ["k<%d>" % n])
        assert mapping["k<%d>" % n] == "_Z1kILi%dEEvPi" % n
        assert int({value}).to_bytes(4, "little") in cubin
'''


def cupy_suite_files(pytester, env, fake_cupy):
    """The fake CuPy 14 and CUPY_SUITE with include/val.cuh; returns the include folder."""
    fake_cupy(program="_NVRTCProgram")
    env.setenv("PYTHONPATH", f"{pytester.path}:{os.environ['PYTHONPATH']}")
    include = pytester.path / "include"
    include.mkdir()
    (include / "val.cuh").write_text("#define VALUE 0x01020304\n")
    pytester.makepyfile(test_suite=CUPY_SUITE.format(value="0x01020304"))
    return include


def cold_cupy_suite(pytester, run, env, store, fake_cupy):
    """cupy_suite_files through cubby, run once cold as suite 'cupy-suite' without prefetch (its
    recipes recorded): (the run's result, the include folder)."""
    include = cupy_suite_files(pytester, env, fake_cupy)
    cold = run(f"--cubby-dir={store}", "--cubby-suite=cupy-suite", "--no-cubby-prefetch")
    cold.assert_outcomes(passed=1)
    return cold, include


def test_a_cupy_suite_records_recipes_so_cubby_warm_recompiles_it_after_a_header_edit(
        pytester, run, env, store, fake_cupy):
    cold, include = cold_cupy_suite(pytester, run, env, store, fake_cupy)
    line = cupy_line(cold)
    assert "compiles through cubby (CuPy 14.0.0" in line
    assert "3 program(s): 0 served by the store, 3 compiled into it, 0 compiled without it" in line
    (include / "val.cuh").write_text("#define VALUE 0x05060708\n")
    # The recipes the session recorded recompile the suite against the edited header.
    if CLI:
        warm = subprocess.run([CLI, "warm", "--dir", str(store), "--suite", "cupy-suite"],
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "CUBBY_ARCH": "sm_90"})
        assert warm.returncode == 0, warm.stderr
    pytester.makepyfile(test_suite=CUPY_SUITE.format(value="0x05060708"))
    after = run(f"--cubby-dir={store}", "--cubby-suite=cupy-suite", "--cubby-require-warm")
    after.assert_outcomes(passed=1)


JOIN_WARM_UP = """
import pytest
{imports}

@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):  # the tests start once the warm-up has read ahead
    warm_up = session.config.pluginmanager.get_plugin("cubby-session").cupy_warm_up
    if warm_up is not None:
        warm_up.join(60)
"""


@pytest.mark.parametrize("imported_by", ["the test module", "conftest.py"])
def test_a_warm_cupy_session_reads_its_suites_entries_ahead_and_serves_them_from_memory(
        pytester, run, env, store, fake_cupy, imported_by):
    # CuPy imported by the tests (the warm-up starts from activation) or before the session
    # activates (CuPy's own tests import it in their conftest.py: the backend is installed at
    # once, then the warm-up).
    _, include = cold_cupy_suite(pytester, run, env, store, fake_cupy)
    pytester.makeconftest(JOIN_WARM_UP.format(
        imports="import cupy.cuda.compiler" if imported_by == "conftest.py" else ""))
    warm = run(f"--cubby-dir={store}", "--cubby-suite=cupy-suite", "--no-cubby-prefetch",
               "--cubby-require-warm")
    warm.assert_outcomes(passed=1)
    assert "hits: 3 (memory 3, disk 0, remote 0), misses: 0" in warm.stdout.str()
    # After a header edit nothing of the old kernels is read ahead: all three compile anew (the
    # test checks the new value in each CUBIN).
    (include / "val.cuh").write_text("#define VALUE 0x05060708\n")
    pytester.makepyfile(test_suite=CUPY_SUITE.format(value="0x05060708"))
    after = run(f"--cubby-dir={store}", "--cubby-suite=cupy-suite", "--no-cubby-prefetch")
    after.assert_outcomes(passed=1)
    assert "hits: 0 (memory 0, disk 0, remote 0), misses: 3" in after.stdout.str()


SHOW_PREFETCH = """
def pytest_terminal_summary(terminalreporter, config):
    plugin = config.pluginmanager.get_plugin("cubby-session")
    terminalreporter.write_line(f"prefetch process started: {plugin.prefetch_started}")
"""


@pytest.mark.skipif(not CLI, reason="the cubby tool (CUBBY_CLI) runs the prefetch")
def test_a_warm_cupy_session_starts_no_prefetch_when_the_store_has_every_recorded_kernel(
        pytester, run, env, store, fake_cupy):
    # The read-ahead found the entry of each of the suite's recipes: the prefetch would find
    # nothing to compile, so no process is started beside the run.
    _, include = cold_cupy_suite(pytester, run, env, store, fake_cupy)
    pytester.makeconftest(JOIN_WARM_UP.format(imports="import cupy.cuda.compiler") + SHOW_PREFETCH)
    warm = run(f"--cubby-dir={store}", "--cubby-suite=cupy-suite", "--cubby-require-warm")
    warm.assert_outcomes(passed=1)
    assert "hits: 3 (memory 3, disk 0, remote 0), misses: 0" in warm.stdout.str()
    assert "prefetch process started: False" in warm.stdout.str()
    assert "prefetch:" not in warm.stdout.str()
    # After a header edit the recipes' entries are lacking: the prefetch starts as before.
    (include / "val.cuh").write_text("#define VALUE 0x05060708\n")
    pytester.makepyfile(test_suite=CUPY_SUITE.format(value="0x05060708"))
    after = run(f"--cubby-dir={store}", "--cubby-suite=cupy-suite")
    after.assert_outcomes(passed=1)
    assert "prefetch: started for suite 'cupy-suite'" in after.stdout.str()
    assert "prefetch process started: True" in after.stdout.str()


def test_an_unconfigured_session_reads_the_suite_ahead_once_its_tests_import_cupy(
        pytester, run, env, fake_cupy):
    # No option, variable or ini key: the session activates when collection ends (its tests
    # import CuPy), after a warm-up on a Cache of its own; the install then reads ahead.
    cupy_suite_files(pytester, env, fake_cupy)
    run().assert_outcomes(passed=1)  # the default store and suite, recorded
    pytester.makeconftest(JOIN_WARM_UP.format(imports=""))
    warm = run()
    warm.assert_outcomes(passed=1)
    assert "hits: 3 (memory 3, disk 0, remote 0), misses: 0" in warm.stdout.str()


def counted(result, label: str) -> int:
    match = re.search(rf"\b{label}: (\d+)", result.stdout.str())
    assert match, result.stdout.str()
    return int(match.group(1))


@pytest.mark.skipif(not CLI, reason="the cubby tool (CUBBY_CLI) runs the prefetch workers")
def test_a_prefetch_worker_crash_on_one_cupy_recipe_leaves_the_rest_warmed_and_the_run_correct(
        pytester, run, env, store, fake_cupy):
    from cubby import cupy_adapter

    _, include = cold_cupy_suite(pytester, run, env, store, fake_cupy)
    (include / "val.cuh").write_text("#define VALUE 0x05060708\n")
    pytester.makepyfile(test_suite=CUPY_SUITE.format(value="0x05060708"))
    # The program k<1> is compiled as (the fake's CuPy name, the adapter's stable folder): the
    # prefetch worker given its recipe dies (SIGKILL).
    source = ('#include "val.cuh"\n__device__ int value = VALUE;\n'
              'template <int N> __global__ void k(int* out) { *out = value + N; }\n')
    options = ("-I" + str(include), "-ftz=true")
    name = hashlib.sha1(repr((source, options, ["k<1>"])).encode()).hexdigest() + ".cubin"
    env.setenv("CUBBY_TEST_WORKER_FAULT", f"crash:{cupy_adapter.ABSENT_PROGRAM_DIR}/{name}.cu")
    after = run(f"--cubby-dir={store}", "--cubby-suite=cupy-suite")
    after.assert_outcomes(passed=1)  # the new header's kernels: none stale, none missing
    assert "prefetch: started for suite 'cupy-suite'" in after.stdout.str()
    # The workers and the session (which compiled k<1> itself) compiled each kernel once.
    assert counted(after, "compiles") == 3
    # The same fault in `cubby warm` after another edit: the crash is k<1>'s worker, the other
    # two recipes still compile, and the next session compiles only k<1>.
    (include / "val.cuh").write_text("#define VALUE 0x0a0b0c0d\n")
    pytester.makepyfile(test_suite=CUPY_SUITE.format(value="0x0a0b0c0d"))
    warm = subprocess.run([CLI, "warm", "--dir", str(store), "--suite", "cupy-suite", "-j", "2",
                           "--json"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CUBBY_ARCH": "sm_90",
                               "CUBBY_TEST_WORKER_FAULT": os.environ["CUBBY_TEST_WORKER_FAULT"]})
    assert warm.returncode == 0, warm.stderr
    report = json.loads(warm.stdout)
    assert report["compiled"] == 2, report
    crashed = f"{cupy_adapter.ABSENT_PROGRAM_DIR}/{name}.cu"
    assert [failure["program"] for failure in report["failed"]] == [crashed], report
    assert "killed by signal" in report["failed"][0]["error"], report
    env.delenv("CUBBY_TEST_WORKER_FAULT")
    last = run(f"--cubby-dir={store}", "--cubby-suite=cupy-suite", "--no-cubby-prefetch")
    last.assert_outcomes(passed=1)
    assert counted(last, "compiles") == 1


def test_require_warm_fails_a_test_where_cupy_compiles_through_cubby(pytester, run, env, store,
                                                                    fake_cupy):
    fake_cupy(program="_NVRTCProgram")
    env.setenv("PYTHONPATH", f"{pytester.path}:{os.environ['PYTHONPATH']}")
    (pytester.path / "include").mkdir()
    (pytester.path / "include" / "val.cuh").write_text("#define VALUE 7\n")
    pytester.makepyfile(test_suite=CUPY_SUITE.format(value="7"))
    result = run(f"--cubby-dir={store}", "--cubby-require-warm", "--no-cubby-prefetch")
    result.assert_outcomes(failed=1)
    assert "--cubby-require-warm: 3 compile(s)" in result.stdout.str()


# Three CuPy programs: one cubby keys, one with an option the key cannot cover (compiled by cubby
# without the store), one jitify program (CuPy's own way).
CUPY_MIXED = '''
from cupy.cuda import compiler

def test_kernels():
    compiler.compile_with_cache('extern "C" __global__ void a() {}')
    compiler.compile_with_cache('extern "C" __global__ void b() {}', ("-Xcudafe", "--no_rtti"))
    compiler.compile_with_cache('extern "C" __global__ void c() {}', jitify=True)
    compiler.compile_with_cache('extern "C" __global__ void d() {}', ("-Xcudafe", "--no_rtti"),
                                jitify=True)
'''


def test_the_cupy_line_and_the_summary_count_programs_compiled_without_the_store_by_reason(
        pytester, run, env, store, fake_cupy):
    fake_cupy(program="_NVRTCProgram")
    env.setenv("PYTHONPATH", f"{pytester.path}:{os.environ['PYTHONPATH']}")
    pytester.makepyfile(test_mixed=CUPY_MIXED)
    cold = run(f"--cubby-dir={store}", "--no-cubby-prefetch")
    cold.assert_outcomes(passed=1)
    # c, a jitify program, is CuPy's own compile stored in the store; d has no key (-Xcudafe).
    assert ("4 program(s): 0 served by the store, 2 compiled into it, 2 compiled without it "
            "(CuPy's own way: jitify 1)") in cupy_line(cold)
    text = cold.stdout.str()
    assert re.search(r"1 of 3 programs compiled without the store: an option the key cannot "
                     r"cover, first -Xcudafe --no_rtti \(program /dev/null/cupy/", text), text
    assert re.search(r"1 of 3 programs compiled without the store: compiled by the front end "
                     r"itself, first CuPy's own way: jitify "
                     r"\(program [0-9a-f]+\.cubin\.cu", text), text
    warm = run(f"--cubby-dir={store}", "--no-cubby-prefetch", "--cubby-require-warm")
    warm.assert_outcomes(failed=1)
    assert ("2 served by the store, 0 compiled into it, 2 compiled without it"
            in cupy_line(warm))
    text = warm.stdout.str()
    assert "--cubby-require-warm: 2 compile(s)" in text, text
    assert "without the store: an option the key cannot cover, -Xcudafe --no_rtti" in text, text
    assert ("without the store: compiled by the front end itself (jitify; counted in "
            "uncached_compiled_elsewhere)") in text, text


def test_a_header_deleted_between_runs_is_cupys_compile_error_not_an_old_kernel(
        cupy_compiler, through_cubby, tmp_path):
    folder = tmp_path / "include"
    folder.mkdir()
    (folder / "val.cuh").write_text("#define VALUE 0x0d0d0d0d\n")
    source = VALUE_SOURCE.format(header="val.cuh")
    payload, _ = compile_again(through_cubby, cupy_compiler, source, (f"-I{folder}",))
    assert holds(payload, 0x0d0d0d0d)
    (folder / "val.cuh").unlink()
    with pytest.raises(cupy_compiler.CompileException) as caught:
        compile_again(through_cubby, cupy_compiler, source, (f"-I{folder}",))
    assert "val.cuh" in str(caught.value)


def test_a_read_only_store_still_compiles_cupys_kernels(cupy_compiler, through_cubby,
                                                       monkeypatch):
    monkeypatch.setenv("CUBBY_READ_ONLY", "1")
    installed = through_cubby()
    payload, _ = cupy_compiler.compile_with_cache('extern "C" __global__ void k() {}')
    assert payload[:4] == b"\x7fELF"
    # Looked up, compiled, not stored: compiled without the store (a read-only store's miss).
    assert installed.counters() == {"cupy_served": 0, "cupy_compiled": 0, "cupy_uncached": 1}
    assert installed.router.cache.usage() == (0, 0)


def test_xdist_workers_compile_each_cupy_kernel_once(pytester, run, env, store, fake_cupy):
    pytest.importorskip("xdist")
    fake_cupy(program="_NVRTCProgram")
    env.setenv("PYTHONPATH", f"{pytester.path}:{os.environ['PYTHONPATH']}")
    (pytester.path / "include").mkdir()
    (pytester.path / "include" / "val.cuh").write_text("#define VALUE 9\n")
    for name in ("a", "b", "c", "d"):
        pytester.makepyfile(**{f"test_{name}": CUPY_SUITE.format(value="9")})
    result = run("-p", "xdist.plugin", "-n", "2", f"--cubby-dir={store}", "--no-cubby-prefetch")
    result.assert_outcomes(passed=4)
    text = result.stdout.str()
    assert re.search(r"compiles: 3 ", text), text
    assert ("12 program(s): 9 served by the store, 3 compiled into it, 0 compiled without it"
            in text), text


def test_a_cccl_style_include_test_macro_in_cupys_headers_keeps_the_program_cached(
        cupy_compiler, through_cubby, tmp_path):
    # CuPy passes its own CCCL with -I; CCCL defines `_CCCL_HAS_INCLUDE(_X) __has_include(_X)`.
    folder = tmp_path / "cccl"
    folder.mkdir()
    (folder / "pre.cuh").write_text(
        "#ifdef __has_include\n#define HAS(_X) __has_include(_X)\n#else\n#define HAS(_X) 0\n"
        "#endif\n")
    (folder / "val.cuh").write_text(
        '#include "pre.cuh"\n#if HAS(<extra.cuh>)\n#include <extra.cuh>\n#endif\n'
        "#ifndef VALUE\n#define VALUE 0x0e0e0e0e\n#endif\n")
    source = VALUE_SOURCE.format(header="val.cuh")
    first = through_cubby()
    assert holds(cupy_compiler.compile_with_cache(source, (f"-I{folder}",))[0], 0x0e0e0e0e)
    first.uninstall()
    second = through_cubby()
    cupy_compiler.compile_with_cache(source, (f"-I{folder}",))
    assert second.router.cache.stats()["hits_disk"] == 1
    second.uninstall()
    # The header the include test looks for appears: a new key, a new kernel.
    (folder / "extra.cuh").write_text("#define VALUE 0x0f0f0f0f\n")
    payload, _ = compile_again(through_cubby, cupy_compiler, source, (f"-I{folder}",))
    assert holds(payload, 0x0f0f0f0f)
