// On a GPU: the reference workloads go through cubby::Cache cold (compiled), then through a fresh
// Cache on the same store (disk hit), and every kernel of the hit is loaded by its name expression,
// launched and checked exactly on the host. Skips with the reason on machines without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cubby/cache.hpp"
#include "cubby/driver.hpp"
#include "cubby_workloads.hpp"
#include "cuda/nvrtc_library.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

namespace wl = cubby::workloads;

CompileRequest request_of(const wl::Workload& workload) {
  CompileRequest request;
  request.source = workload.source;
  request.program_name = workload.name + ".cu";
  request.name_expressions = workload.name_expressions;
  request.options = workload.options;
  request.arch = gpu_arch().value_or_throw();
  return request;
}

// Extents and strides (padded layout_right for layout_stride) of one test case of a kernel.
struct Shape {
  std::size_t rank = 1;
  std::array<std::size_t, 3> extents{1, 1, 1};
  std::array<std::size_t, 3> strides{0, 0, 0};  // used by layout_stride only
};

Shape shape_for(const wl::ScaleKernel& kernel) {
  Shape shape;
  shape.rank = kernel.rank;
  // 37, 5x7 and 3x5x6 elements: more than the 32 threads launched, so the grid-stride loop runs.
  const std::array<std::array<std::size_t, 3>, 3> dynamic = {{{37, 1, 1}, {5, 7, 1}, {3, 5, 6}}};
  shape.extents = dynamic[kernel.rank - 1];
  for (std::size_t r = 0; r < kernel.rank; ++r) {
    if (kernel.static_extents[r] != 0) shape.extents[r] = kernel.static_extents[r];
  }
  // layout_stride: innermost dimension every element (every other one for rank 1), rows padded
  // by 2 elements, so the mapping is neither layout_right's nor contiguous.
  if (kernel.rank == 1) {
    shape.strides = {2, 0, 0};
  } else {
    const std::size_t last = kernel.rank - 1;
    shape.strides[last] = 1;
    shape.strides[last - 1] = shape.extents[last] + 2;
    if (kernel.rank == 3) shape.strides[0] = shape.strides[1] * shape.extents[1];
  }
  return shape;
}

// The buffer offset of a multi-index under `layout` (as the kernel's mdspan maps it).
std::size_t offset_of(wl::Layout layout, const Shape& shape,
                      const std::array<std::size_t, 3>& index) {
  std::size_t offset = 0;
  switch (layout) {
    case wl::Layout::right:
      for (std::size_t r = 0; r < shape.rank; ++r) offset = offset * shape.extents[r] + index[r];
      break;
    case wl::Layout::left:
      for (std::size_t r = shape.rank; r-- > 0;) offset = offset * shape.extents[r] + index[r];
      break;
    case wl::Layout::stride:
      for (std::size_t r = 0; r < shape.rank; ++r) offset += index[r] * shape.strides[r];
      break;
  }
  return offset;
}

// Launches one `scale` instantiation on `shape` and checks every element of the output buffer:
// mapped elements hold in * factor, the others (layout_stride padding) keep their sentinel.
template <class T>
void check_scale(const Module& module, const wl::ScaleKernel& kernel) {
  SCOPED_TRACE(kernel.name_expression);
  const Shape shape = shape_for(kernel);
  std::vector<std::size_t> mapped;  // offsets the mapping reaches, in index order
  const std::size_t n0 = shape.extents[0];
  const std::size_t n1 = shape.rank > 1 ? shape.extents[1] : 1;
  const std::size_t n2 = shape.rank > 2 ? shape.extents[2] : 1;
  for (std::size_t i = 0; i < n0; ++i) {
    for (std::size_t j = 0; j < n1; ++j) {
      for (std::size_t k = 0; k < n2; ++k) {
        mapped.push_back(offset_of(kernel.layout, shape, {i, j, k}));
      }
    }
  }
  std::size_t span = 0;
  for (std::size_t offset : mapped) span = std::max(span, offset + 1);

  std::vector<T> in(span);
  for (std::size_t e = 0; e < span; ++e) in[e] = static_cast<T>(e % 97 + 1);
  const T sentinel = static_cast<T>(-7);
  const T factor = static_cast<T>(2);
  std::vector<T> out(span, sentinel);

  DeviceBuffer in_buffer(span * sizeof(T));
  DeviceBuffer out_buffer(span * sizeof(T));
  copy_to_device(in_buffer.get(), in.data(), in_buffer.bytes());
  copy_to_device(out_buffer.get(), out.data(), out_buffer.bytes());

  CUdeviceptr out_pointer = out_buffer.get();
  CUdeviceptr in_pointer = in_buffer.get();
  std::array<std::size_t, 3> extents = shape.extents;
  std::array<std::size_t, 3> strides = shape.strides;
  T factor_argument = factor;
  void* args[] = {&out_pointer, &in_pointer, &extents[0], &extents[1],     &extents[2],
                  &strides[0],  &strides[1], &strides[2], &factor_argument};
  launch(module.function(kernel.name_expression), Dim3{1}, Dim3{32}, args);
  copy_to_host(out.data(), out_buffer.get(), out_buffer.bytes());

  std::vector<bool> is_mapped(span, false);
  for (std::size_t offset : mapped) is_mapped[offset] = true;
  std::size_t wrong = 0;
  for (std::size_t e = 0; e < span; ++e) {
    const T expected = is_mapped[e] ? static_cast<T>(in[e] * factor) : sentinel;
    if (out[e] != expected && wrong++ < 3) {
      ADD_FAILURE() << "element " << e << ": got " << out[e] << ", expected " << expected;
    }
  }
  EXPECT_EQ(wrong, 0u) << "of " << span << " elements";
}

void check_scale_kernel(const Module& module, const wl::ScaleKernel& kernel) {
  switch (kernel.dtype) {
    case wl::Dtype::f32:
      return check_scale<float>(module, kernel);
    case wl::Dtype::f64:
      return check_scale<double>(module, kernel);
    case wl::Dtype::i32:
      return check_scale<int>(module, kernel);
    case wl::Dtype::i64:
      return check_scale<long long>(module, kernel);
  }
  FAIL() << "unknown dtype";
}

class GpuModule : public ::testing::Test {
 protected:
  void SetUp() override {
    const Result<void> status = gpu_status();
    if (!status.ok()) GTEST_SKIP() << status.error().message;
    config_.dir = store_.path() / "store";
  }

  testing::TempDir store_{"gpu-module"};
  Config config_;
};

TEST_F(GpuModule, ColdCompileThenDiskHitLaunchesEveryKernel) {
  const wl::Workload tiny = wl::tiny();
  const wl::Workload mdspan = wl::mdspan50();
  const std::vector<wl::ScaleKernel> kernels = wl::mdspan50_scale_kernels();
  ASSERT_EQ(kernels.size(), 48u);
  ASSERT_EQ(mdspan.name_expressions.size(), 50u);

  std::map<std::string, std::string> tiny_names;
  std::map<std::string, std::string> mdspan_names;
  {
    Cache cold(config_);
    const CacheResult tiny_cold = cold.compile(request_of(tiny));
    EXPECT_FALSE(tiny_cold.hit);
    EXPECT_EQ(tiny_cold.tier, Source::compiled);
    const CacheResult mdspan_cold = cold.compile(request_of(mdspan));
    EXPECT_FALSE(mdspan_cold.hit);
    EXPECT_EQ(mdspan_cold.tier, Source::compiled);
    ASSERT_EQ(mdspan_cold.entry->lowered_names.size(), 50u);
    tiny_names = tiny_cold.entry->lowered_names;
    mdspan_names = mdspan_cold.entry->lowered_names;
  }

  Cache warm(config_);  // a fresh process-like view of the same store: nothing in memory
  const CacheResult tiny_hit = warm.compile(request_of(tiny));
  EXPECT_TRUE(tiny_hit.hit);
  EXPECT_EQ(tiny_hit.tier, Source::disk);
  EXPECT_EQ(tiny_hit.entry->lowered_names, tiny_names);
  const CacheResult hit = warm.compile(request_of(mdspan));
  ASSERT_TRUE(hit.hit);
  EXPECT_EQ(hit.tier, Source::disk);
  EXPECT_EQ(hit.entry->lowered_names, mdspan_names);
  EXPECT_EQ(warm.stats().compiles, 0u);

  // tiny: its kernel and its variable.
  {
    Module module(tiny_hit.entry);
    const DeviceVariable answer = module.variable(wl::kTinyVariableExpression);
    ASSERT_EQ(answer.bytes, sizeof(int));
    int value = 0;
    copy_to_host(&value, answer.pointer, sizeof value);
    EXPECT_EQ(value, wl::kTinyAnswer);

    std::vector<int> data = {-1, 0, 1, 41, 99};
    DeviceBuffer buffer(data.size() * sizeof(int));
    copy_to_device(buffer.get(), data.data(), buffer.bytes());
    CUdeviceptr pointer = buffer.get();
    int n = static_cast<int>(data.size());
    void* args[] = {&pointer, &n};
    launch(module.function(wl::kTinyKernelExpression), Dim3{1}, Dim3{64}, args);
    copy_to_host(data.data(), buffer.get(), buffer.bytes());
    EXPECT_EQ(data, (std::vector<int>{0, 1, 2, 42, 100}));
  }

  // mdspan50: all 48 scale kernels, the scale_factor variable and apply_scale_factor.
  Module module(hit.entry);
  for (const wl::ScaleKernel& kernel : kernels) check_scale_kernel(module, kernel);

  const DeviceVariable factor = module.variable(wl::kScaleFactorExpression);
  ASSERT_EQ(factor.bytes, sizeof(float));
  float factor_value = 0;
  copy_to_host(&factor_value, factor.pointer, sizeof factor_value);
  EXPECT_EQ(factor_value, static_cast<float>(wl::kScaleFactorInitial));
  // The '&' is optional for variables.
  EXPECT_EQ(module.variable(std::string(wl::kScaleFactorExpression).substr(1)).pointer,
            factor.pointer);

  const std::vector<float> input = {0.5f, 1.0f, -2.0f, 8.0f, 100.0f, 3.25f, 7.0f};
  std::vector<float> output(input.size(), -1.0f);
  DeviceBuffer in_buffer(input.size() * sizeof(float));
  DeviceBuffer out_buffer(output.size() * sizeof(float));
  copy_to_device(in_buffer.get(), input.data(), in_buffer.bytes());
  CUdeviceptr out_pointer = out_buffer.get();
  CUdeviceptr in_pointer = in_buffer.get();
  std::size_t count = input.size();
  void* args[] = {&out_pointer, &in_pointer, &count};
  launch(module.function(wl::kApplyScaleFactorExpression), Dim3{1}, Dim3{32}, args);
  copy_to_host(output.data(), out_buffer.get(), out_buffer.bytes());
  for (std::size_t i = 0; i < input.size(); ++i) {
    EXPECT_EQ(output[i], input[i] * static_cast<float>(wl::kScaleFactorInitial)) << "element " << i;
  }

  // An expression the program was not compiled with.
  try {
    static_cast<void>(module.function(
        "cubby_bench::scale<float, cuda::std::dextents<size_t, 4>, cuda::std::layout_right>"));
    ADD_FAILURE() << "function() of an unknown expression did not throw";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), Errc::name_not_found) << error.what();
  }
}

// Kernels NVRTC compiled with a reused precompiled header (CUBBY_PCH, on by default) compute what
// those compiled without one do: the same mdspan50 program under several names (other keys) in one
// process; the first goes without PCH, the second saves it, the third reuses it; another Cache
// with PCH off compiles it too.
TEST_F(GpuModule, KernelsCompiledWithAReusedPchComputeLikeThoseWithout) {
  const std::vector<wl::ScaleKernel> kernels = wl::mdspan50_scale_kernels();
  CompileRequest request = request_of(wl::mdspan50());
  Cache cache(config_);
  request.program_name = "pch_first.cu";
  (void)cache.compile(request);
  request.program_name = "pch_saved.cu";
  (void)cache.compile(request);
  request.program_name = "pch_reused.cu";
  const CacheResult reused = cache.compile(request);
  Config off = config_;
  off.pch = false;
  Cache without(off);
  request.program_name = "pch_without.cu";
  const CacheResult plain = without.compile(request);
  EXPECT_EQ(without.stats().pch_created + without.stats().pch_reused, 0u);
  if (nvrtc_api().ok() && nvrtc_api()->supports_pch()) {
    EXPECT_EQ(cache.stats().pch_created, 1u);
    EXPECT_EQ(cache.stats().pch_reused, 1u);
  }
  EXPECT_EQ(reused.entry->lowered_names, plain.entry->lowered_names);
  for (const CacheResult* result : {&reused, &plain}) {
    Module module(result->entry);
    for (const wl::ScaleKernel& kernel : kernels) check_scale_kernel(module, kernel);
  }
}

}  // namespace
}  // namespace cubby
