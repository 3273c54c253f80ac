// The example suite's NVRTC programs (header-only, shared by both example binaries).
//
// One program per layout (layout_right, layout_left, layout_stride) x index type (int,
// long long) x rank (0-3): 24 programs. Each instantiates
//   template <class T, class Extents, class Layout>
//   __global__ void example::transform(T* out, const T* in, example::Shape shape, T a, T b);
// for 14 element types (8 integer types, float, double, __half, __nv_bfloat16,
// cuda::std::complex<float>, cuda::std::complex<double>): 336 kernels in all.
//
// Kernel contract: views `in` and `out` as cuda::std::mdspan<T, Extents, Layout> with the
// extents shape.extents[0..rank) and, for layout_stride only, the strides shape.strides[0..rank);
// writes out(i...) = in(i...) * a + b (in T's arithmetic) for every multi-index and touches no
// other element. Any grid and block size works (grid-stride loop).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cubby/nvrtc.hpp"

namespace cubby::examples {

enum class Layout { right, left, stride };

// How the host reads and writes an element type: its size and arithmetic class.
enum class Kind { signed_int, unsigned_int, floating, half, bfloat16, complex };

struct ElementType {
  const char* spelling;  // as written in the name expression
  std::size_t size;      // bytes (for complex: both parts)
  Kind kind;
};

inline const std::vector<ElementType>& element_types() {
  static const std::vector<ElementType> types = {
      {"cuda::std::int8_t", 1, Kind::signed_int},
      {"cuda::std::uint8_t", 1, Kind::unsigned_int},
      {"cuda::std::int16_t", 2, Kind::signed_int},
      {"cuda::std::uint16_t", 2, Kind::unsigned_int},
      {"int", 4, Kind::signed_int},
      {"unsigned int", 4, Kind::unsigned_int},
      {"long long", 8, Kind::signed_int},
      {"cuda::std::uint64_t", 8, Kind::unsigned_int},
      {"float", 4, Kind::floating},
      {"double", 8, Kind::floating},
      {"__half", 2, Kind::half},
      {"__nv_bfloat16", 2, Kind::bfloat16},
      {"cuda::std::complex<float>", 8, Kind::complex},
      {"cuda::std::complex<double>", 16, Kind::complex},
  };
  return types;
}

// The kernel's by-value shape argument (same layout as example::Shape in the source).
struct Shape {
  long long extents[3] = {1, 1, 1};
  long long strides[3] = {0, 0, 0};
};

struct Program {
  std::string name;  // "layout_right_int_rank2": a valid gtest parameter name
  Layout layout = Layout::right;
  std::string layout_spelling;  // "cuda::std::layout_right"
  std::string index_spelling;   // "int", "long long"
  std::size_t rank = 0;

  // "cuda::std::dextents<int, 2>"
  std::string extents_spelling() const {
    return "cuda::std::dextents<" + index_spelling + ", " + std::to_string(rank) + ">";
  }
  // The name expression of the instantiation for `type`.
  std::string name_expression(const ElementType& type) const {
    return std::string("example::transform<") + type.spelling + ", " + extents_spelling() + ", " +
           layout_spelling + ">";
  }
  std::vector<std::string> name_expressions() const {
    std::vector<std::string> names;
    for (const auto& type : element_types()) names.push_back(name_expression(type));
    return names;
  }
};

inline const std::vector<std::string>& program_options() {
  static const std::vector<std::string> options = {"-std=c++17"};
  return options;
}

// The 24 programs, in a fixed order.
inline std::vector<Program> programs() {
  struct L {
    Layout layout;
    const char* name;
  };
  const L layouts[] = {{Layout::right, "layout_right"},
                       {Layout::left, "layout_left"},
                       {Layout::stride, "layout_stride"}};
  const char* index_types[] = {"int", "long long"};
  std::vector<Program> result;
  for (const auto& l : layouts) {
    for (const char* index : index_types) {
      for (std::size_t rank = 0; rank <= 3; ++rank) {
        Program program;
        program.layout = l.layout;
        program.layout_spelling = std::string("cuda::std::") + l.name;
        program.index_spelling = index;
        program.rank = rank;
        program.name = std::string(l.name) + "_" +
                       (std::string(index) == "int" ? "int" : "longlong") + "_rank" +
                       std::to_string(rank);
        result.push_back(std::move(program));
      }
    }
  }
  return result;
}

// The program text (the same for every program: each differs only in its name expressions,
// which are part of the key).
inline const char* source() {
  return R"cuda(#include <cuda/std/array>
#include <cuda/std/complex>
#include <cuda/std/cstdint>
#include <cuda/std/mdspan>
#include <cuda/std/type_traits>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace example {

struct Shape {
  long long extents[3];
  long long strides[3];
};

template <class T>
__device__ T affine(T x, T a, T b) {
  return T(x * a + b);
}

template <class T, class Extents, class Layout>
__global__ void transform(T* out, const T* in, Shape shape, T a, T b) {
  using index_type = typename Extents::index_type;
  constexpr int rank = int(Extents::rank());
  cuda::std::array<index_type, rank> extents{};
  cuda::std::array<index_type, rank> strides{};
  index_type total = 1;
  for (int r = 0; r < rank; ++r) {
    extents[r] = index_type(shape.extents[r]);
    strides[r] = index_type(shape.strides[r]);
    total *= extents[r];
  }
  using Mapping = typename Layout::template mapping<Extents>;
  const Mapping mapping = [&] {
    if constexpr (cuda::std::is_same_v<Layout, cuda::std::layout_stride>) {
      return Mapping(Extents(extents), strides);
    } else {
      return Mapping(Extents(extents));
    }
  }();
  const cuda::std::mdspan<const T, Extents, Layout> source(in, mapping);
  const cuda::std::mdspan<T, Extents, Layout> target(out, mapping);
  const index_type step = index_type(gridDim.x * blockDim.x);
  for (index_type linear = index_type(blockIdx.x * blockDim.x + threadIdx.x); linear < total;
       linear += step) {
    cuda::std::array<index_type, rank> index{};
    index_type rest = linear;
    for (int r = rank - 1; r >= 0; --r) {
      index[r] = rest % extents[r];
      rest /= extents[r];
    }
    target[index] = affine(source[index], a, b);
  }
}

}  // namespace example
)cuda";
}

// The compile request of `program`: both example binaries build it the same way, so they share
// its store entry.
inline CompileRequest request_for(const Program& program) {
  CompileRequest request;
  request.source = source();
  request.program_name = program.name + ".cu";
  request.name_expressions = program.name_expressions();
  request.options = program_options();
  return request;
}

}  // namespace cubby::examples
