// The name-expression corpus shared by the NVRTC and recovery tests: one program with many
// kernels and __device__ variables whose names stress lowering (typedefs, enumerators, constant
// expressions, packs, auto parameters, defaults, inline and anonymous namespaces, mdspan).
// Compile with -std=c++17 and the CCCL include folder of the toolkit.
#pragma once

namespace cubby::testing {

inline constexpr const char* kNameExpressionCorpus = R"(
#include <cuda/std/cstdint>
#include <cuda/std/cstddef>
#include <cuda/std/mdspan>
namespace ns {
enum class Tag { A, B, C };
using idx_t = cuda::std::int32_t;
typedef float real_t;
inline namespace v2 {
template <class T, int N = 128> __global__ void k(T* out) { out[threadIdx.x % N] = T(N); }
}
template <Tag t> __global__ void e(int* out) { out[0] = static_cast<int>(t); }
template <int N> __global__ void c(int* out) { out[0] = N; }
template <int... Is> __global__ void pack(int* out) { out[0] = (0 + ... + Is); }
template <auto V> __global__ void a(int* out) { out[0] = static_cast<int>(V); }
template <class T = float, int N = 4> __global__ void d(T* out) { out[0] = T(N); }
template <class Ext> __global__ void md(float* p, Ext ext) {
  cuda::std::mdspan<float, Ext> m(p, ext);
  m(0, 0) = 1.0f;
}
template <class T> __device__ T table[8];
__device__ int counter;
namespace { template <class T> __global__ void hidden(T* out) { out[0] = T(); } }
}
namespace { __global__ void anon_k(int* p) { p[0] = 1; } }
)";

}  // namespace cubby::testing
