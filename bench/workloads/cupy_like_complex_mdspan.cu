// A CuPy-like module that reaches Thrust through CuPy's bundled CCCL (whose backend headers are
// computed includes: thrust/iterator/detail/device_system_tag.h) and mdspan: @NS@ is replaced by
// each module's namespace (bench/key_scan_bench.cpp).
#include <thrust/iterator/counting_iterator.h>
#include <cuda/std/mdspan>
#include <cuda/std/type_traits>
#include <cupy/carray.cuh>
namespace @NS@ {
template <class T, class Extents, class Layout>
__global__ void apply(T* out, const T* in, size_t e0, size_t e1, size_t e2, T factor) {
  cuda::std::array<size_t, 3> all{e0, e1, e2};
  cuda::std::array<size_t, Extents::rank()> ext{};
  for (size_t r = 0; r < Extents::rank(); ++r) ext[r] = all[r];
  using Mapping = typename Layout::template mapping<Extents>;
  cuda::std::mdspan<T, Extents, Layout> target(out, Mapping(Extents(ext)));
  target.data_handle()[threadIdx.x] = in[threadIdx.x] * factor;
}
}  // namespace @NS@
