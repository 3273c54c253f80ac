// Reference NVRTC workloads shared by the benchmarks and the GPU tests (header-only).
//
// A Workload is one NVRTC program: its source, the name expressions to register with
// nvrtcAddNameExpression (spelled the way users write them, typedefs and aliases included), and
// the NVRTC options it needs. Every workload needs `options` (at least "-std=c++17":
// <cuda/std/mdspan> requires C++17); pass them to the compile unchanged.
//
// mdspan50: 48 instantiations of `cubby_bench::scale<T, Extents, Layout>` over
//   4 dtypes (float, double, int, long long) x 4 extents types (dextents<size_t, 1|2|3> and
//   extents<size_t, dynamic_extent, 4>) x 3 layouts (layout_right, layout_left, layout_stride),
// plus the kernel `cubby_bench::apply_scale_factor<float>` and the `__device__` variable
// `&cubby_bench::scale_factor<float>` (50 name expressions).
//
// Kernel contracts (so a test can launch and check each one):
//   template <class T, class Extents, class Layout>
//   __global__ void scale(T* out, const T* in, size_t e0, size_t e1, size_t e2,
//                         size_t s0, size_t s1, size_t s2, T factor);
//     Views `in` and `out` as mdspan<T, Extents, Layout> with extents (e0, e1, e2) truncated to
//     Extents::rank() (static extents must be passed with their static value, e.g. e1 = 4) and,
//     for layout_stride only, strides (s0, s1, s2) truncated likewise (ignored otherwise).
//     Writes out(i...) = in(i...) * factor for every index; touches no other element.
//     Any grid and block size works (grid-stride loop over the elements).
//   template <class T>
//   __global__ void apply_scale_factor(T* out, const T* in, size_t n);
//     out[i] = in[i] * scale_factor<T> for i < n.
//   template <class T> __device__ T scale_factor = T(3);   (kScaleFactorInitial)
//
// tiny: `cubby_tiny::add_one<int>(int* data, int n)` (data[i] += 1 for i < n) and the
// `__device__ int cubby_tiny::answer = 42` (kTinyAnswer), for quick tests.
//
// mdspan-suite (mdspan_suite()): 25 programs, like the modules of one real test file. Program k
// (named "mdspan-suite/kk") defines `cubby_suite_kk::apply<T, Extents, Layout>` with the launch
// contract of `scale` above and one of five element-wise operations (out = in * factor,
// in + factor, in - factor, factor, in * in * factor), and registers 14 of its 48 instantiations
// (the 48 of mdspan50, starting at 5 * k, wrapping): 350 name expressions in all.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace cubby::workloads {

struct Workload {
  std::string name;                           // "mdspan50", "tiny"
  std::string source;                         // program text
  std::vector<std::string> name_expressions;  // as users write them
  std::vector<std::string> options;           // NVRTC options the program needs ("-std=c++17")
};

enum class Dtype { f32, f64, i32, i64 };
enum class Layout { right, left, stride };

// One `cubby_bench::scale` instantiation of mdspan50 and what a test needs to launch it.
struct ScaleKernel {
  std::string name_expression;  // "cubby_bench::scale<float, cuda::std::dextents<...>, ...>"
  Dtype dtype = Dtype::f32;
  std::size_t rank = 1;                         // 1, 2 or 3
  std::array<std::size_t, 3> static_extents{};  // per dimension: 0 = dynamic, else the static value
  Layout layout = Layout::right;
};

inline constexpr int kScaleFactorInitial = 3;  // initializer of cubby_bench::scale_factor<T>
inline constexpr int kTinyAnswer = 42;         // initializer of cubby_tiny::answer
inline constexpr const char* kApplyScaleFactorExpression = "cubby_bench::apply_scale_factor<float>";
inline constexpr const char* kScaleFactorExpression = "&cubby_bench::scale_factor<float>";
inline constexpr const char* kTinyKernelExpression = "cubby_tiny::add_one<int>";
inline constexpr const char* kTinyVariableExpression = "&cubby_tiny::answer";

// The element size of a dtype, in bytes.
inline std::size_t dtype_size(Dtype dtype) {
  switch (dtype) {
    case Dtype::f32:
      return 4;
    case Dtype::f64:
      return 8;
    case Dtype::i32:
      return 4;
    case Dtype::i64:
      return 8;
  }
  return 0;
}

// The 48 `scale` instantiations of mdspan50, in a fixed order.
inline std::vector<ScaleKernel> mdspan50_scale_kernels() {
  struct DtypeSpelling {
    Dtype dtype;
    const char* spelling;
  };
  struct ExtentsSpelling {
    std::size_t rank;
    std::array<std::size_t, 3> statics;
    const char* spelling;
  };
  struct LayoutSpelling {
    Layout layout;
    const char* spelling;
  };
  const DtypeSpelling dtypes[] = {{Dtype::f32, "float"},
                                  {Dtype::f64, "double"},
                                  {Dtype::i32, "int"},
                                  {Dtype::i64, "long long"}};
  const ExtentsSpelling extents[] = {
      {1, {0, 0, 0}, "cuda::std::dextents<size_t, 1>"},
      {2, {0, 0, 0}, "cuda::std::dextents<size_t, 2>"},
      {3, {0, 0, 0}, "cuda::std::dextents<size_t, 3>"},
      {2, {0, 4, 0}, "cuda::std::extents<size_t, cuda::std::dynamic_extent, 4>"}};
  const LayoutSpelling layouts[] = {{Layout::right, "cuda::std::layout_right"},
                                    {Layout::left, "cuda::std::layout_left"},
                                    {Layout::stride, "cuda::std::layout_stride"}};
  std::vector<ScaleKernel> kernels;
  for (const auto& d : dtypes) {
    for (const auto& e : extents) {
      for (const auto& l : layouts) {
        ScaleKernel kernel;
        kernel.name_expression = std::string("cubby_bench::scale<") + d.spelling + ", " +
                                 e.spelling + ", " + l.spelling + ">";
        kernel.dtype = d.dtype;
        kernel.rank = e.rank;
        kernel.static_extents = e.statics;
        kernel.layout = l.layout;
        kernels.push_back(std::move(kernel));
      }
    }
  }
  return kernels;
}

// CUDA source shared by the mdspan programs: make_view builds a view of rank 1 to 3 over `data`
// (strided for layout_stride), from the first Extents::rank() extents and strides.
inline constexpr const char* kMakeViewSource =
    R"cuda(template <class T, class Extents, class Layout>
__device__ cuda::std::mdspan<T, Extents, Layout> make_view(
    T* data, const cuda::std::array<size_t, Extents::rank()>& extents,
    const cuda::std::array<size_t, Extents::rank()>& strides) {
  const Extents ext(extents);
  if constexpr (cuda::std::is_same_v<Layout, cuda::std::layout_stride>) {
    return cuda::std::mdspan<T, Extents, Layout>(
        data, typename Layout::template mapping<Extents>(ext, strides));
  } else {
    return cuda::std::mdspan<T, Extents, Layout>(data, ext);
  }
}
)cuda";

// CUDA source of `template <class T, class Extents, class Layout> __global__ void name(...)`,
// a grid-stride element-wise kernel over views of rank 1 to 3 (needs make_view): each output
// element is element(E), E being the expression of the matching input element.
template <class Element>
std::string elementwise_kernel_source(const std::string& name, Element element) {
  return R"cuda(template <class T, class Extents, class Layout>
__global__ void )cuda" +
         name + R"cuda((T* out, const T* in, size_t e0, size_t e1, size_t e2, size_t s0, size_t s1,
                      size_t s2, T factor) {
  constexpr size_t rank = Extents::rank();
  static_assert(rank >= 1 && rank <= 3, ")cuda" +
         name + R"cuda( supports ranks 1 to 3");
  const size_t all_extents[3] = {e0, e1, e2};
  const size_t all_strides[3] = {s0, s1, s2};
  cuda::std::array<size_t, rank> extents{};
  cuda::std::array<size_t, rank> strides{};
  size_t total = 1;
  for (size_t r = 0; r < rank; ++r) {
    extents[r] = all_extents[r];
    strides[r] = all_strides[r];
    total *= all_extents[r];
  }
  const auto source = make_view<const T, Extents, Layout>(in, extents, strides);
  const auto target = make_view<T, Extents, Layout>(out, extents, strides);
  const size_t step = size_t(gridDim.x) * blockDim.x;
  for (size_t linear = size_t(blockIdx.x) * blockDim.x + threadIdx.x; linear < total;
       linear += step) {
    if constexpr (rank == 1) {
      target(linear) = )cuda" +
         element("source(linear)") + R"cuda(;
    } else if constexpr (rank == 2) {
      const size_t i = linear / extents[1];
      const size_t j = linear % extents[1];
      target(i, j) = )cuda" +
         element("source(i, j)") + R"cuda(;
    } else {
      const size_t k = linear % extents[2];
      const size_t j = (linear / extents[2]) % extents[1];
      const size_t i = linear / (extents[1] * extents[2]);
      target(i, j, k) = )cuda" +
         element("source(i, j, k)") + R"cuda(;
    }
  }
}
)cuda";
}

// The reference workload: one program, 50 name expressions (see the top of this file).
inline Workload mdspan50() {
  Workload workload;
  workload.name = "mdspan50";
  workload.options = {"-std=c++17"};
  const auto times_factor = [](const std::string& element) { return element + " * factor"; };
  workload.source = std::string(R"cuda(#include <cuda/std/array>
#include <cuda/std/mdspan>
#include <cuda/std/type_traits>

namespace cubby_bench {

template <class T>
__device__ T scale_factor = T(3);

)cuda") + kMakeViewSource +
                    "\n" + elementwise_kernel_source("scale", times_factor) + R"cuda(
template <class T>
__global__ void apply_scale_factor(T* out, const T* in, size_t n) {
  const cuda::std::mdspan<const T, cuda::std::dextents<size_t, 1>> source(in, n);
  const cuda::std::mdspan<T, cuda::std::dextents<size_t, 1>> target(out, n);
  const size_t step = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    target(i) = source(i) * scale_factor<T>;
  }
}

}  // namespace cubby_bench
)cuda";
  for (const auto& kernel : mdspan50_scale_kernels()) {
    workload.name_expressions.push_back(kernel.name_expression);
  }
  workload.name_expressions.emplace_back(kApplyScaleFactorExpression);
  workload.name_expressions.emplace_back(kScaleFactorExpression);
  return workload;
}

// A small program for quick tests: one kernel and one variable.
inline Workload tiny() {
  Workload workload;
  workload.name = "tiny";
  workload.options = {"-std=c++17"};
  workload.source = R"cuda(namespace cubby_tiny {

__device__ int answer = 42;

template <class T>
__global__ void add_one(T* data, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) data[i] += T(1);
}

}  // namespace cubby_tiny
)cuda";
  workload.name_expressions = {kTinyKernelExpression, kTinyVariableExpression};
  return workload;
}

inline constexpr const char* kMdspanSuiteName = "mdspan-suite";
inline constexpr int kMdspanSuitePrograms = 25;
inline constexpr int kMdspanSuiteInstantiations = 14;

// The element-wise operation of program `program` of mdspan-suite, as a C++ expression over
// `x` (the input element) and `factor`.
inline const char* mdspan_suite_operation(int program) {
  static const char* const operations[] = {"x * factor", "x + factor", "x - factor", "factor",
                                           "x * x * factor"};
  return operations[program % 5];
}

// The programs of mdspan-suite (see the top of this file), in a fixed order.
inline std::vector<Workload> mdspan_suite() {
  const std::vector<ScaleKernel> kernels = mdspan50_scale_kernels();
  std::vector<Workload> programs;
  for (int program = 0; program < kMdspanSuitePrograms; ++program) {
    const std::string number = (program < 10 ? "0" : "") + std::to_string(program);
    const std::string ns = "cubby_suite_" + number;
    Workload workload;
    workload.name = std::string(kMdspanSuiteName) + "/" + number;
    workload.options = {"-std=c++17"};
    const auto through_operation = [](const std::string& element) {
      return "operation(" + element + ", factor)";
    };
    workload.source = R"cuda(#include <cuda/std/array>
#include <cuda/std/mdspan>
#include <cuda/std/type_traits>

namespace )cuda" + ns +
                      " {\n\n" + kMakeViewSource + R"cuda(
template <class T>
__device__ T operation(T x, T factor) {
  return )cuda" + mdspan_suite_operation(program) +
                      R"cuda(;
}

)cuda" + elementwise_kernel_source("apply", through_operation) +
                      "\n}  // namespace " + ns + "\n";
    const std::string prefix = "cubby_bench::scale<";
    for (int i = 0; i < kMdspanSuiteInstantiations; ++i) {
      const auto& kernel = kernels[static_cast<std::size_t>(5 * program + i) % kernels.size()];
      workload.name_expressions.push_back(ns + "::apply<" +
                                          kernel.name_expression.substr(prefix.size()));
    }
    programs.push_back(std::move(workload));
  }
  return programs;
}

}  // namespace cubby::workloads
