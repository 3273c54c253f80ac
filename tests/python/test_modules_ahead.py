"""CuPy's module loads done ahead (pytest_plugin/src/cubby/_modules_ahead.py and the adapter's
use of it), against a fake cupy.cuda.compiler with CuPy 14's ``function.Module`` (``ptr``,
``load(cubin)``) and ``driver.moduleUnload``, and a fake Cache whose ``take_module`` stands for
modules a warm-up thread loaded: CuPy's load of the payload the adapter returned takes the module
left for exactly that bytes object; every other load is CuPy's own; a module left and not taken
is unloaded. No GPU needed (the GPU run is tests/python/gpu/test_cupy_modules_ahead.py)."""

from __future__ import annotations

import types

import pytest

from conftest import needs_library

pytestmark = needs_library


class FakeModule:
    """CuPy's cupy.cuda.function.Module: ``ptr`` set by ``load``."""

    loads = []

    def __init__(self):
        self.ptr = 0

    def load(self, cubin):
        FakeModule.loads.append(cubin)
        self.ptr = 0x1000 + len(FakeModule.loads)


def fake_compiler(unloaded):
    function = types.ModuleType("cupy.cuda.function")
    function.Module = FakeModule
    function.LinkState = object
    compiler = types.ModuleType("cupy.cuda.compiler")
    compiler.function = function
    compiler.driver = types.SimpleNamespace(moduleUnload=unloaded.append)
    compiler.CompileException = RuntimeError

    class Program:  # CuPy 14's _NVRTCProgram
        def __init__(self, src, name="default_program", headers=(), include_names=(),
                     name_expressions=None, method="ptx"):
            self.ptr = 1

    compiler._NVRTCProgram = Program
    return compiler


class FakeCache:
    """Cache.compile's result for every source, and modules 'loaded ahead' for some keys."""

    def __init__(self, ahead):
        self.modules_ahead = True
        self.ahead = dict(ahead)  # key -> module
        self.taken = []

    def compile(self, source, names, options, arch, program_name):
        from cubby._cache import CompileResult
        kind = "ptx" if arch.startswith("compute_") else "cubin"
        return CompileResult(key=f"key-{source}", hit=True, tier="memory", lowered_names={},
                             cubin=b"\x7fELF" + source.encode() + b"\x00", payload_kind=kind)

    def take_module(self, key):
        self.taken.append(key)
        return self.ahead.pop(key, 0)


def cupys_flow(compiler, program_class, source, method="cubin"):
    """_compile_with_cache_cuda's: a Module made, the program compiled, its payload loaded."""
    module = compiler.function.Module()
    payload, _ = program_class(source, "/dev/null/cupy/k.cu", method=method).compile(
        ("-arch=sm_90" if method == "cubin" else "-arch=compute_90",))
    module.load(payload)
    return module, payload


@pytest.fixture
def adapter():
    from cubby import cupy_adapter
    from cubby._modules_ahead import replace_module_class

    def make(ahead):
        unloaded = []
        compiler = fake_compiler(unloaded)
        cache = FakeCache(ahead)
        router = cupy_adapter.CompileRouter(cache)
        function, router.hand_over = replace_module_class(compiler)
        assert function is not None and router.hand_over is not None
        program = cupy_adapter.make_program_class(compiler._NVRTCProgram, router, compiler)
        return types.SimpleNamespace(compiler=compiler, cache=cache, router=router,
                                     program=program, unloaded=unloaded, function=function)

    FakeModule.loads = []
    return make


def test_cupys_load_of_the_payload_takes_the_module_loaded_ahead(adapter):
    a = adapter({"key-a": 0xA})
    module, _ = cupys_flow(a.compiler, a.program, "a")
    assert module.ptr == 0xA
    assert FakeModule.loads == []  # no load of CuPy's own
    assert isinstance(module, FakeModule)
    assert a.router.counters()["cupy_loaded_ahead"] == 1
    # A kernel nobody loaded ahead: CuPy loads it itself.
    other, payload = cupys_flow(a.compiler, a.program, "b")
    assert FakeModule.loads == [payload] and other.ptr == 0x1001
    assert a.cache.taken == ["key-a", "key-b"]
    assert a.router.counters()["cupy_loaded_ahead"] == 1
    assert a.unloaded == []


def test_only_that_very_payload_object_takes_it_and_a_module_left_over_is_unloaded(adapter):
    a = adapter({"key-a": 0xA, "key-b": 0xB})
    payload, _ = a.program("a", "/dev/null/cupy/k.cu", method="cubin").compile(("-arch=sm_90",))
    # Equal bytes, another object (what CuPy loads after linking is another object too).
    equal = bytes(bytearray(payload))
    module = a.compiler.function.Module()
    module.load(equal)
    assert FakeModule.loads == [equal] and module.ptr != 0xA
    # The next program's hand-over unloads the one CuPy did not take.
    module, _ = cupys_flow(a.compiler, a.program, "b")
    assert module.ptr == 0xB
    assert a.unloaded == [0xA]


def test_ptx_payloads_and_a_cache_that_preloaded_nothing_take_nothing(adapter):
    a = adapter({"key-a": 0xA})
    module, _ = cupys_flow(a.compiler, a.program, "a", method="ptx")
    assert module.ptr != 0xA and a.cache.taken == []
    a.cache.modules_ahead = False
    module, _ = cupys_flow(a.compiler, a.program, "a")
    assert module.ptr != 0xA and a.cache.taken == []


def test_uninstalling_puts_cupys_function_module_back_and_unloads_what_was_left(adapter):
    from cubby import cupy_adapter

    a = adapter({"key-a": 0xA})
    a.program("a", "/dev/null/cupy/k.cu", method="cubin").compile(("-arch=sm_90",))
    installed = cupy_adapter.Installed("compile", "", None, a.router, None, None, None,
                                       a.function)
    installed._put_compile_path_back(a.compiler)
    assert a.compiler.function is a.function
    assert a.compiler.function.Module is FakeModule
    assert a.unloaded == [0xA]


def test_a_cupy_without_the_expected_module_or_driver_is_left_as_it_is():
    from cubby._modules_ahead import replace_module_class

    compiler = fake_compiler([])
    del compiler.driver
    function = compiler.function
    assert replace_module_class(compiler) == (None, None)
    assert compiler.function is function
    compiler = fake_compiler([])
    compiler.function.Module = None
    assert replace_module_class(compiler) == (None, None)


def test_the_view_of_cupys_function_module_passes_every_other_name_on():
    from cubby._modules_ahead import replace_module_class

    compiler = fake_compiler([])
    function = compiler.function
    replace_module_class(compiler)
    assert compiler.function is not function
    assert compiler.function.LinkState is function.LinkState
    assert issubclass(compiler.function.Module, FakeModule)
    with pytest.raises(AttributeError):
        compiler.function.no_such_name
