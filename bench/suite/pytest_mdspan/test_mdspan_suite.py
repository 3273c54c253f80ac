"""A pytest suite like a real one for templated kernels: 25 NVRTC programs (the shape of the
C++ `mdspan-suite` workload), each compiled through the pytest plugin's `cubby_cache` fixture
(so the session records its recipes and the next one prefetches them) and checked test by test.
The whole-suite benchmark times it cold (empty store), warm, and after a header edit. Needs the
cubby package with its plugin (`-p cubby.plugin`, pytest_plugin/src on PYTHONPATH) and libcubby
(CUBBY_LIBRARY); skips with the reason without the package."""
import itertools

import pytest

cubby = pytest.importorskip("cubby", reason="the cubby package is not importable (PYTHONPATH=pytest_plugin/src)")

DTYPES = ["float", "double", "int", "long long"]
EXTENTS = ["cuda::std::dextents<size_t, 1>", "cuda::std::dextents<size_t, 2>",
           "cuda::std::dextents<size_t, 3>", "cuda::std::extents<size_t, cuda::std::dynamic_extent, 4>"]
LAYOUTS = ["cuda::std::layout_right", "cuda::std::layout_left", "cuda::std::layout_stride"]
OPERATIONS = ["x * factor", "x + factor", "x - factor", "factor", "x * x * factor"]
COMBOS = list(itertools.product(DTYPES, EXTENTS, LAYOUTS))
PROGRAMS = 25
PER_PROGRAM = 14

SOURCE = """#include <cuda/std/mdspan>
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
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {{
    out[i] = operation(in[i], factor);
  }}
  (void)source; (void)target;
}}
}}  // namespace {ns}
"""


def program(index):
    ns = f"cubby_pysuite_{index:02d}"
    names = [f"{ns}::apply<{d}, {e}, {l}>"
             for d, e, l in (COMBOS[(5 * index + i) % len(COMBOS)] for i in range(PER_PROGRAM))]
    return SOURCE.format(ns=ns, op=OPERATIONS[index % len(OPERATIONS)]), names


@pytest.mark.parametrize("index", range(PROGRAMS))
def test_program_compiles_and_names_resolve(cubby_cache, index):
    source, names = program(index)
    result = cubby_cache.compile(source, name_expressions=names, options=["-std=c++17"],
                           program_name=f"pysuite_{index:02d}.cu")
    assert len(result.cubin) > 0
    ns = f"cubby_pysuite_{index:02d}"
    for name in names:
        lowered = result.lowered_names[name]
        assert lowered.startswith(f"_ZN{len(ns)}{ns}5applyI"), (name, lowered)
