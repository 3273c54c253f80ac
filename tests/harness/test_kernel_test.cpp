// KernelTest in process: modules shared by key, compiled at most once per process, loaded only
// on a GPU; GpuKernelTest skips with the driver's reason without one.
#include <gtest/gtest.h>

#include <string>

#include "cubby/testing/kernel_test.hpp"
#include "cubby/testing/session.hpp"
#include "test_support.hpp"

namespace cubby::testing {
namespace {

const char* const kSource =
    "template <class T> __global__ void twice(T* data) { data[threadIdx.x] *= T(2); }\n";

// The process's shared store (CUBBY_DIR): warm or cold, a program is compiled at most once.
class KernelTestInProcess : public KernelTest {};

TEST_F(KernelTestInProcess, SameProgramSharesOneModuleAndCompilesOnce) {
  const std::uint64_t compiles_before = cache().stats().compiles;
  const auto first = compile(kSource, {"twice<float>"}, {"-std=c++17"});
  const auto second = compile(kSource, {"twice<float>"}, {"-std=c++17"});
  EXPECT_EQ(first.get(), second.get());
  EXPECT_FALSE(first->lowered_name("twice<float>").empty());
  EXPECT_LE(cache().stats().compiles - compiles_before, 1u);
}

TEST_F(KernelTestInProcess, DifferentProgramsAreDifferentModules) {
  const auto a = compile(kSource, {"twice<float>"}, {"-std=c++17"});
  const auto b = compile(kSource, {"twice<int>"}, {"-std=c++17"});
  EXPECT_NE(a.get(), b.get());
  EXPECT_NE(a->result().key, b->result().key);
}

TEST_F(KernelTestInProcess, CompileErrorsThrowWithNvrtcsLog) {
  try {
    (void)compile("__global__ void broken( { }\n", {}, {});
    FAIL() << "expected cubby::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), Errc::compile_failed);
    EXPECT_FALSE(std::string(error.what()).empty());
  }
}

TEST_F(KernelTestInProcess, KernelLookupNeedsAGpuOrLaunches) {
  const auto module = compile(kSource, {"twice<int>"}, {"-std=c++17"});
  if (has_gpu()) {
    DeviceArray<int> data(std::vector<int>{1, 2, 3});
    module->launch("twice<int>", {1}, {3}, data.get());
    EXPECT_EQ(data.to_host(), (std::vector<int>{2, 4, 6}));
  } else {
    try {
      (void)module->function("twice<int>");
      FAIL() << "expected cubby::Error without a GPU";
    } catch (const Error& error) {
      EXPECT_TRUE(error.code() == Errc::driver_unavailable || error.code() == Errc::no_gpu)
          << error.what();
    }
  }
}

TEST(GpuSkipReason, AgreesWithTheDriver) {
  const bool usable = gpu_status().ok();
  EXPECT_EQ(gpu_skip_reason().has_value(), !usable);
  if (!usable) {
    EXPECT_NE(gpu_skip_reason()->find("no usable GPU"), std::string::npos);
  }
}

class GpuOnly : public GpuKernelTest {};

TEST_F(GpuOnly, RunsOnlyWithAGpu) {
  // Reached only when SetUp did not skip.
  EXPECT_TRUE(has_gpu());
}

}  // namespace
}  // namespace cubby::testing
