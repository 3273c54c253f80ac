// A downstream GoogleTest suite on the cubby harness: a compile-only test (runs everywhere) and a
// launch test (skips with the reason without a GPU).
#include <gtest/gtest.h>

#include <cubby/testing/gtest.hpp>
#include <vector>

namespace {

constexpr const char* kSource =
    "template <class T> __global__ void fill(T* p, int n) {\n"
    "  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);\n"
    "  if (i < n) p[i] = T(7);\n"
    "}\n";

class Fill : public cubby::testing::KernelTest {};

TEST_F(Fill, CompilesEveryInstantiation) {
  const auto module = compile(kSource, {"fill<int>", "fill<float>"}, {"-std=c++17"});
  EXPECT_EQ(module->lowered_name("fill<int>"), "_Z4fillIiEvPT_i");
  EXPECT_EQ(module->lowered_name("fill<float>"), "_Z4fillIfEvPT_i");
}

class FillGpu : public cubby::testing::GpuKernelTest {};

TEST_F(FillGpu, WritesSeven) {
  const auto module = compile(kSource, {"fill<int>", "fill<float>"}, {"-std=c++17"});
  cubby::testing::DeviceArray<int> data(std::vector<int>(40, 0));
  module->launch("fill<int>", {1}, {64}, data.get(), 40);
  EXPECT_EQ(data.to_host(), std::vector<int>(40, 7));
}

}  // namespace
