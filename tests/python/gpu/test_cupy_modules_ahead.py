"""Real CuPy (>= 14) sessions through the plugin whose kernels are loaded onto the GPU ahead
(pytest_plugin/src/cubby/_modules_ahead.py): a first session compiles and records its kernels, a
second, warm, session's warm-up thread loads them while pytest collects and CuPy's loads take
them (nearly all); its kernels compute what NumPy computes, with --cubby-require-warm. With
--no-cubby-preload nothing is loaded ahead. Skips with the reason without CuPy or a GPU, or
without libcubby."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

from conftest import SRC, cupy_on_a_gpu

cupy = cupy_on_a_gpu()

# A suite of CuPy kernels of each kind: RawModule with name expressions, RawKernel, elementwise
# and reduction kernels, checked against NumPy. Its first test waits for the plugin's warm-up
# thread, so that every later kernel can be one loaded ahead.
SUITE = textwrap.dedent('''
    import threading
    import numpy
    import cupy
    import pytest

    def test_0_the_warm_up_ends():
        for thread in threading.enumerate():
            if thread.name == "cubby-cupy-warm-up":
                thread.join(120)
                assert not thread.is_alive()

    @pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
    def test_raw_module_with_name_expressions(dtype):
        ctype = {"float32": "float", "float64": "double", "int32": "int"}[dtype]
        source = "template <class T> __global__ void twice(T* x, int n) {" \\
                 " int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = x[i] * 2; }"
        module = cupy.RawModule(code=source, name_expressions=[f"twice<{ctype}>"])
        x = cupy.arange(100, dtype=dtype)
        module.get_function(f"twice<{ctype}>")((1,), (128,), (x, numpy.int32(100)))
        assert (x.get() == numpy.arange(100, dtype=dtype) * 2).all()

    def test_raw_kernel():
        kernel = cupy.RawKernel(r\'\'\'extern "C" __global__ void plus3(int* x)
                                 { x[threadIdx.x] += 3; }\'\'\', "plus3")
        x = cupy.zeros(32, dtype=cupy.int32)
        kernel((1,), (32,), (x,))
        assert (x.get() == 3).all()

    @pytest.mark.parametrize("dtype", ["float32", "complex64"])
    def test_elementwise_and_reduction(dtype):
        a = numpy.linspace(-2, 2, 1000).astype(dtype)
        x = cupy.asarray(a)
        numpy.testing.assert_allclose(cupy.exp(x).get(), numpy.exp(a), rtol=1e-5, atol=1e-6)
        numpy.testing.assert_allclose(float(abs(x).sum().get()), float(abs(a).sum()), rtol=1e-4)
        mix = cupy.ElementwiseKernel("T a, T b", "T c", "c = a * b + a", "cubby_mix")
        numpy.testing.assert_allclose(mix(x, x).get(), a * a + a, rtol=1e-5, atol=1e-6)
''')


def run_session(tmp_path, *options: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(SRC)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        "CUPY_CACHE_DIR": str(tmp_path / "cupy-unused")}
    env.pop("CUBBY_DIR", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "cubby.plugin",
         f"--cubby-dir={tmp_path / 'store'}", "--cubby-suite=modules-ahead", *options,
         str(tmp_path / "test_suite.py")],
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return done.stdout


def cupy_line(output: str) -> str:
    match = re.search(r"^cupy: .*$", output, re.M)
    assert match, output[-3000:]
    return match.group(0)


def test_a_warm_session_takes_its_kernels_loaded_ahead_and_they_compute_right(tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE)
    cold = cupy_line(run_session(tmp_path))
    assert "loaded onto the GPU ahead" not in cold, cold  # nothing recorded before it
    warm = cupy_line(run_session(tmp_path, "--cubby-require-warm"))
    served = re.search(r"(\d+) served by the store \((\d+) loaded onto the GPU ahead\)", warm)
    assert served, warm
    # Nearly every served program comes loaded: one asked for before its thread had a current
    # context, or loaded by CuPy from other bytes, is loaded by CuPy itself.
    assert 0 < int(served.group(2)) <= int(served.group(1)), warm
    assert "0 compiled into it, 0 compiled without it" in warm, warm
    off = cupy_line(run_session(tmp_path, "--cubby-require-warm", "--no-cubby-preload"))
    assert "loaded onto the GPU ahead" not in off and "0 compiled into it" in off, off
