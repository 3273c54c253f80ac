"""A CuPy test file like a real one for templated kernels: 25 RawModules of cuda::std::mdspan
kernels (350 name expressions in all), 100 tests that launch them and check the results with
NumPy. It uses plain CuPy only: run under the cubby plugin, CuPy's kernel cache goes to the cubby
store (the adapter); with --no-cubby-cupy, CuPy's own cache serves it. ci/gpu/pytest.sh times it
cold and warm both ways. Skips with the reason without CuPy or a GPU."""

from __future__ import annotations

import functools
import itertools

import pytest

cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
np = pytest.importorskip("numpy")
try:
    if cupy.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no GPU", allow_module_level=True)
except Exception as error:  # no driver
    pytest.skip(f"no usable GPU ({error})", allow_module_level=True)

DTYPES = [("float", np.float32), ("double", np.float64), ("int", np.int32), ("long long", np.int64)]
EXTENTS = [(1, "cuda::std::dextents<size_t, 1>"), (2, "cuda::std::dextents<size_t, 2>"),
           (3, "cuda::std::dextents<size_t, 3>"),
           (2, "cuda::std::extents<size_t, cuda::std::dynamic_extent, 4>")]
LAYOUTS = ["cuda::std::layout_right", "cuda::std::layout_left", "cuda::std::layout_stride"]
OPERATIONS = [lambda x, f: x * f, lambda x, f: x + f, lambda x, f: x - f,
              lambda x, f: np.full_like(x, f), lambda x, f: x * x * f]
OPERATION_TEXT = ["x * factor", "x + factor", "x - factor", "factor", "x * x * factor"]
COMBOS = list(itertools.product(range(len(DTYPES)), range(len(EXTENTS)), LAYOUTS))  # 48
MODULES = 25
PER_MODULE = 14
TESTS_PER_MODULE = 4
SHAPE = (8, 4, 3)  # e1 = 4 matches the static extent

SOURCE = """#include <cuda/std/mdspan>
#include <cuda/std/type_traits>
namespace {ns} {{
template <class T>
__device__ T operation(T x, T factor) {{ return {op}; }}
template <class T, class Extents, class Layout>
__global__ void apply(T* out, const T* in, size_t e0, size_t e1, size_t e2, T factor) {{
  const cuda::std::array<size_t, 3> all{{e0, e1, e2}};
  cuda::std::array<size_t, Extents::rank()> ext{{}};
  size_t total = 1;
  for (size_t r = 0; r < Extents::rank(); ++r) {{ ext[r] = all[r]; total *= all[r]; }}
  using Mapping = typename Layout::template mapping<Extents>;
  Mapping mapping;
  if constexpr (cuda::std::is_same_v<Layout, cuda::std::layout_stride>) {{
    cuda::std::array<size_t, Extents::rank()> strides{{}};
    size_t stride = 1;
    for (size_t r = Extents::rank(); r-- > 0;) {{ strides[r] = stride; stride *= ext[r]; }}
    mapping = Mapping(Extents(ext), strides);
  }} else {{
    mapping = Mapping(Extents(ext));
  }}
  cuda::std::mdspan<const T, Extents, Layout> source(in, mapping);
  cuda::std::mdspan<T, Extents, Layout> target(out, mapping);
  const size_t n = target.mapping().required_span_size();
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n && i < total;
       i += gridDim.x * blockDim.x) {{
    target.data_handle()[i] = operation(source.data_handle()[i], factor);
  }}
}}
}}  // namespace {ns}
"""


def instantiations(module: int):
    """The 14 (name expression, dtype, rank) of a module: COMBOS from 5 * module, wrapping."""
    out = []
    for offset in range(PER_MODULE):
        dtype_index, extents_index, layout = COMBOS[(5 * module + offset) % len(COMBOS)]
        spelling, dtype = DTYPES[dtype_index]
        rank, extents = EXTENTS[extents_index]
        out.append((f"suite_{module:02d}::apply<{spelling}, {extents}, {layout}>", dtype, rank))
    return out


@functools.lru_cache(maxsize=None)
def module_of(module: int):
    source = SOURCE.format(ns=f"suite_{module:02d}", op=OPERATION_TEXT[module % 5])
    names = [name for name, _, _ in instantiations(module)]
    raw = cupy.RawModule(code=source, options=("-std=c++17",), name_expressions=names)
    raw.compile()
    return raw


CASES = [(module, test) for module in range(MODULES) for test in range(TESTS_PER_MODULE)]


@pytest.mark.parametrize("module,part", CASES, ids=[f"m{m:02d}-{t}" for m, t in CASES])
def test_kernels(module, part):
    raw = module_of(module)
    for name, dtype, rank in instantiations(module)[part::TESTS_PER_MODULE]:
        shape = SHAPE[:rank]
        host = (np.arange(int(np.prod(shape))) % 7 + 1).astype(dtype)
        factor = dtype(3)
        source = cupy.asarray(host)
        target = cupy.zeros_like(source)
        kernel = raw.get_function(name)
        extents = [np.uint64(e) for e in (SHAPE[0], SHAPE[1], SHAPE[2])]
        kernel((1,), (128,), (target, source, *extents, factor))
        expected = OPERATIONS[module % 5](host, factor).astype(dtype)
        np.testing.assert_array_equal(cupy.asnumpy(target), expected, err_msg=name)
