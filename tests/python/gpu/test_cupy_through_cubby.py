"""Real CuPy (>= 14) and cuda.core compiling through cubby, each case in fresh Python processes:
a header edit serves CuPy's own cache a stale kernel and cubby a correct one; what cubby hands
CuPy (CUBIN bytes, name mapping, results) is what CuPy's own compile gives; cuda.core programs
with name expressions launch the same from a hit as from a compile. Skips with the reason without
CuPy, cuda.core or a GPU, or without libcubby."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import SRC, cupy_on_a_gpu

cupy = cupy_on_a_gpu()

# Runs in a fresh process: prints one JSON line. THROUGH_CUBBY=1 installs the adapter on the store
# CUBBY_DIR; otherwise CuPy's own cache (CUPY_CACHE_DIR) serves it.
VALUE_SCRIPT = textwrap.dedent('''
    import json, os, sys
    import cupy
    if os.environ.get("THROUGH_CUBBY") == "1":
        import cubby
        from cubby import cupy_adapter
        installed = cupy_adapter.install(cubby.Cache())
        assert installed.mode == "compile", installed.note
    include = sys.argv[1]
    source = '#include "val.cuh"\\n' \\
        'template <int N> __global__ void put(int* out) { *out = VALUE + N; }\\n' \\
        'extern "C" __global__ void plain(int* out) { *out = VALUE; }\\n'
    out = cupy.zeros(1, dtype=cupy.int32)
    module = cupy.RawModule(code=source, options=("-I" + include,), name_expressions=["put<0>"])
    module.get_function("put<0>")((1,), (1,), (out,))
    named = int(out.get()[0])
    plain = cupy.RawModule(code=source, options=("-I" + include,))
    plain.get_function("plain")((1,), (1,), (out,))
    print(json.dumps({"named": named, "plain": int(out.get()[0])}))
''')


def run_script(script: str, *args: str, **env: str) -> dict:
    full = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(SRC)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        **env}
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                          env=full, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_header_edit_leaves_cupys_own_cache_stale_and_cubby_correct(tmp_path):
    include = tmp_path / "include"
    include.mkdir()
    cupy_env = {"CUPY_CACHE_DIR": str(tmp_path / "cupy-cache")}
    cubby_env = {"THROUGH_CUBBY": "1", "CUBBY_DIR": str(tmp_path / "store"),
                 "CUPY_CACHE_DIR": str(tmp_path / "cupy-unused")}
    (include / "val.cuh").write_text("#define VALUE 1\n")
    assert run_script(VALUE_SCRIPT, str(include), **cupy_env) == {"named": 1, "plain": 1}
    assert run_script(VALUE_SCRIPT, str(include), **cubby_env) == {"named": 1, "plain": 1}
    (include / "val.cuh").write_text("#define VALUE 2\n")
    own = run_script(VALUE_SCRIPT, str(include), **cupy_env)
    ours = run_script(VALUE_SCRIPT, str(include), **cubby_env)
    assert own == {"named": 1, "plain": 1}, f"CuPy's own cache is no longer stale: {own}"
    assert ours == {"named": 2, "plain": 2}, f"a stale kernel through cubby: {ours}"


# One RawModule with name expressions in a fresh process, by CuPy's own compile (an empty CuPy
# cache) or through cubby (THROUGH_CUBBY=1): what _NVRTCProgram.compile returned, the kernels'
# results, and whether cubby compiled.
SAME_SCRIPT = textwrap.dedent('''
    import hashlib, json, os
    import cupy
    from cupy.cuda import compiler
    source = """namespace ns {
    template <class T, int N>
    __global__ void fill(T* out, T value) {
      for (int i = 0; i < N; ++i) out[i] = value * T(i);
    }
    }
    """
    names = ["ns::fill<float, 32>", "ns::fill<int, 16 + 16>"]
    cache = None
    if os.environ.get("THROUGH_CUBBY") == "1":
        import cubby
        from cubby import cupy_adapter
        cache = cubby.Cache()
        assert cupy_adapter.install(cache).mode == "compile"
    seen = []
    program = compiler._NVRTCProgram
    compile = program.compile
    def recording(self, options=(), log_stream=None):
        payload, mapping = compile(self, options, log_stream)
        if mapping:
            seen.append((hashlib.sha256(payload).hexdigest(), len(payload), mapping))
        return payload, mapping
    program.compile = recording
    module = cupy.RawModule(code=source, options=("--std=c++17",), name_expressions=names)
    results = []
    for name, dtype in zip(names, ("float32", "int32")):
        out = cupy.zeros(32, dtype=dtype)
        module.get_function(name)((1,), (1,), (out, cupy.dtype(dtype).type(3)))
        results.append(out.get().tolist())
    print(json.dumps({"seen": seen, "results": results,
                      "compiles": cache.stats()["compiles"] if cache else None}))
''')


def test_cubby_gives_cupy_the_cubin_and_name_mapping_of_cupys_own_compile(tmp_path):
    own = run_script(SAME_SCRIPT, CUPY_CACHE_DIR=str(tmp_path / "cupy-cache"))
    through = {"THROUGH_CUBBY": "1", "CUBBY_DIR": str(tmp_path / "store"),
               "CUPY_CACHE_DIR": str(tmp_path / "cupy-unused")}
    cold = run_script(SAME_SCRIPT, **through)
    warm = run_script(SAME_SCRIPT, **through)
    # The cold process also compiles CuPy's empty _preprocess program through cubby.
    assert cold["compiles"] >= 1 and warm["compiles"] == 0, (cold, warm)
    assert len(own["seen"]) == 1 and cold["seen"] and warm["seen"], (own, cold, warm)
    assert own["results"] == cold["results"] == warm["results"]
    assert own["seen"][0][2] == cold["seen"][0][2] == warm["seen"][0][2], "name mappings differ"
    assert own["seen"][0][:2] == cold["seen"][0][:2] == warm["seen"][0][:2], \
        f"CUBIN bytes differ from CuPy's own compile: {own['seen']} {cold['seen']}"


CUDA_CORE_SCRIPT = textwrap.dedent('''
    import json
    import cupy
    import numpy
    from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
    import cubby
    from cubby import cuda_core
    source = """namespace ns {
    template <class T> __global__ void twice(T* out, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) out[i] = T(2) * T(i);
    }
    }"""
    names = ["ns::twice<float>", "ns::twice<int>"]
    device = Device()
    device.set_current()
    stream = device.create_stream()
    options = ProgramOptions(std="c++17", arch=f"sm_{device.arch}")
    def launch_all(code):
        out = []
        for name, dtype in zip(names, ("float32", "int32")):
            data = cupy.zeros(64, dtype=dtype)
            launch(stream, LaunchConfig(grid=1, block=64), code.get_kernel(name),
                   numpy.uint64(data.data.ptr), numpy.int32(64))
            stream.sync()
            out.append(data.get().tolist())
        return out
    reference = launch_all(Program(source, "c++", options).compile("cubin",
                                                                   name_expressions=names))
    tiers = []
    results = []
    for round_ in range(2):
        with cubby.Cache() as cache:
            code = cuda_core.compile(source, options, names, cache=cache)
            tiers.append(cache.stats()["compiles"])
            results.append(launch_all(code))
    print(json.dumps({"same": all(r == reference for r in results), "compiles": tiers}))
''')


def test_cuda_core_kernels_from_a_hit_compute_what_a_compile_computes(tmp_path):
    pytest.importorskip("cuda.core", reason="cuda.core is not installed")
    result = run_script(CUDA_CORE_SCRIPT, CUBBY_DIR=str(tmp_path / "store"))
    assert result == {"same": True, "compiles": [1, 0]}, result


def test_cuda_cores_own_compile_cache_stores_in_cubby(tmp_path):
    pytest.importorskip("cuda.core.utils", reason="cuda.core is not installed")
    script = textwrap.dedent('''
        import json
        from cuda.core import Device, Program, ProgramOptions
        import cubby
        from cubby import cuda_core
        device = Device()
        device.set_current()
        options = ProgramOptions(arch=f"sm_{device.arch}")
        source = 'extern "C" __global__ void k(int* p) { *p = 7; }'
        sizes = []
        for round_ in range(2):
            with cubby.Cache() as cache:
                resource = cuda_core.ProgramCache(cache)
                code = Program(source, "c++", options).compile("cubin", cache=resource)
                code.get_kernel("k")
                sizes.append([cache.usage()[0], len(resource)])
        with cubby.Cache() as cache:
            resource = cuda_core.ProgramCache(cache)
            resource.clear()
            sizes.append([cache.usage()[0], len(resource)])
        print(json.dumps({"entries": sizes}))
    ''')
    # [store entries, len(ProgramCache)] per round, then after ProgramCache.clear()
    assert run_script(script, CUBBY_DIR=str(tmp_path / "store")) == {
        "entries": [[1, 1], [1, 1], [0, 0]]}
