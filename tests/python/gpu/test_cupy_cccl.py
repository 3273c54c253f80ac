"""Real CuPy (>= 14) kernels that reach CuPy's bundled CCCL (cupy/_core/include/cupy/_cccl/{cub,
thrust,libcudacxx}, which CuPy passes as -I folders ahead of its own include folder): programs
including cupy/complex.cuh (which reaches thrust, whose backend headers are named by macros),
CUB block and warp primitives, thrust's iterators and function objects (thrust's algorithms need
standard library headers NVRTC lacks), and CuPy's own elementwise and CUB reduction kernels over
complex dtypes. Each case runs twice in fresh processes on one store through the CuPy adapter: the
first compiles into the store, the second must be served from it (0 compiles, hits > 0) with 0
programs compiled without the store, and both compute what NumPy computes. Skips with the reason
without CuPy or a GPU, or without libcubby."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import SRC, cupy_on_a_gpu

cupy = cupy_on_a_gpu()

# Runs in a fresh process with the adapter installed on the store CUBBY_DIR (CuPy's own cache is
# switched off by the adapter): runs case argv[1], checks it against NumPy, prints one JSON line
# with whether it matched, the handle's counters and the adapter's (through cubby / CuPy's own).
SCRIPT = textwrap.dedent('''
    import json, sys
    import numpy
    import cupy
    import cubby
    from cubby import cupy_adapter

    COMPLEX = r"""
    #include <cupy/complex.cuh>
    extern "C" __global__ void spin(const complex<float>* in, complex<float>* out, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) out[i] = exp(in[i]) * conj(in[i]) + complex<float>(0.5f, -1.0f);
    }
    """
    CUB = r"""
    #include <cub/block/block_reduce.cuh>
    #include <cub/warp/warp_scan.cuh>
    #include <cuda/std/type_traits>
    template <class T, int Threads>
    __global__ void block_sum(const T* in, T* out) {
      static_assert(cuda::std::is_arithmetic_v<T>, "numbers only");
      using Reduce = cub::BlockReduce<T, Threads>;
      __shared__ typename Reduce::TempStorage storage;
      T total = Reduce(storage).Sum(in[blockIdx.x * Threads + threadIdx.x]);
      if (threadIdx.x == 0) out[blockIdx.x] = total;
    }
    template <class T>
    __global__ void warp_prefix(const T* in, T* out) {
      using Scan = cub::WarpScan<T>;
      __shared__ typename Scan::TempStorage storage;
      T value = in[threadIdx.x];
      Scan(storage).InclusiveSum(value, value);
      out[threadIdx.x] = value;
    }
    """
    THRUST = r"""
    #include <thrust/functional.h>
    #include <thrust/iterator/counting_iterator.h>
    extern "C" __global__ void squares(long long first, long long* out, int n) {
      const thrust::counting_iterator<long long> values(first);
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) out[i] = thrust::multiplies<long long>()(values[i], values[i]);
    }
    """

    def launch(source, name, grid, block, args, names=None):
        module = cupy.RawModule(code=source, options=("--std=c++17",), name_expressions=names)
        module.get_function(name)(grid, block, args)

    rng = numpy.random.default_rng(7)

    def complex_include():
        x = (rng.random(256) + 1j * rng.random(256)).astype(numpy.complex64)
        out = cupy.empty(256, dtype=cupy.complex64)
        launch(COMPLEX, "spin", (2,), (128,), (cupy.asarray(x), out, numpy.int32(256)))
        want = numpy.exp(x) * numpy.conj(x) + numpy.complex64(0.5 - 1j)
        return bool(numpy.allclose(out.get(), want, rtol=1e-5, atol=1e-5))

    def cub_primitives():
        ok = True
        for spelling, dtype in (("float", numpy.float32), ("int", numpy.int32)):
            x = (rng.random(4 * 128) * 10).astype(dtype)
            out = cupy.zeros(4, dtype=dtype)
            name = f"block_sum<{spelling}, 128>"
            launch(CUB, name, (4,), (128,), (cupy.asarray(x), out), names=[name])
            ok &= bool(numpy.allclose(out.get(), x.reshape(4, 128).sum(axis=1), rtol=1e-4))
        x = numpy.arange(32, dtype=numpy.int32)
        out = cupy.zeros(32, dtype=numpy.int32)
        launch(CUB, "warp_prefix<int>", (1,), (32,), (cupy.asarray(x), out),
               names=["warp_prefix<int>"])
        return ok and bool((out.get() == numpy.cumsum(x)).all())

    def thrust_iterators():
        out = cupy.empty(300, dtype=cupy.int64)
        launch(THRUST, "squares", (3,), (128,), (numpy.int64(-100), out, numpy.int32(300)))
        want = (numpy.arange(300, dtype=numpy.int64) - 100) ** 2
        return bool((out.get() == want).all())

    def cupy_complex_kernels():
        x = (rng.random(1000) - 0.5 + 1j * (rng.random(1000) - 0.5)).astype(numpy.complex128)
        kernel = cupy.ElementwiseKernel("complex128 x", "complex128 y",
                                        "y = sqrt(x) * conj(x)", "cubby_sqrt_conj")
        y = kernel(cupy.asarray(x))
        ok = bool(numpy.allclose(y.get(), numpy.sqrt(x) * numpy.conj(x)))
        single = cupy.asarray(x.astype(numpy.complex64))
        ok &= bool(numpy.allclose(complex(single.sum()), x.astype(numpy.complex64).sum(),
                                  rtol=1e-4))  # a reduction through CuPy's CUB accelerator
        ok &= bool(numpy.allclose(float(cupy.abs(single).max()),
                                  numpy.abs(x.astype(numpy.complex64)).max()))
        return ok

    cache = cubby.Cache()
    installed = cupy_adapter.install(cache)
    assert installed.mode == "compile", installed.note
    matched = globals()[sys.argv[1]]()
    cupy.cuda.Device().synchronize()
    print(json.dumps({"matched": matched, "stats": cache.stats(),
                      "cupy": installed.counters()}))
''')

CASES = ["complex_include", "cub_primitives", "thrust_iterators", "cupy_complex_kernels"]
# A counter whose name says a program was compiled without the store, and CuPy's own compiles.
WITHOUT = re.compile(r"without|uncached|fallback|no_store")


def run_case(case: str, store, cupy_dir) -> dict:
    env = {**os.environ, "CUBBY_DIR": str(store), "CUPY_CACHE_DIR": str(cupy_dir),
           "PYTHONPATH": os.pathsep.join(
               [str(SRC)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    env.pop("CUBBY_DISABLE", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT, case], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["stderr"] = done.stderr
    return result


def compiled_without_the_store(result: dict) -> dict:
    counts = {**result["stats"], **result["cupy"]}
    return {name: value for name, value in counts.items()
            if value and (WITHOUT.search(name) or name.startswith("cupy_own:"))}


@pytest.mark.parametrize("case", CASES)
def test_kernels_reaching_cupys_bundled_cccl_are_served_from_the_store_on_a_second_pass(
        case, tmp_path):
    store, cupy_dir = tmp_path / "store", tmp_path / "cupy-unused"
    cold = run_case(case, store, cupy_dir)
    warm = run_case(case, store, cupy_dir)
    assert cold["matched"] and warm["matched"], "a result differs from NumPy's"
    assert cold["stats"]["compiles"] >= 1 and cold["cupy"]["cupy_compiled"] >= 1, cold
    assert compiled_without_the_store(cold) == {}, (
        f"compiled without the store on the first pass: {compiled_without_the_store(cold)}\n"
        + cold["stderr"][-2000:])
    hits = sum(warm["stats"][name] for name in ("hits_memory", "hits_disk", "hits_remote"))
    assert warm["stats"]["compiles"] == 0 and hits > 0, (
        f"second pass: {warm['stats']['compiles']} compiles, {hits} hits; the first pass said:\n"
        + cold["stderr"][-2000:])
    assert warm["cupy"]["cupy_served"] >= 1 and warm["cupy"]["cupy_compiled"] == 0, warm["cupy"]
    assert compiled_without_the_store(warm) == {}, warm
