// GPU tests for driver enumeration (driver.cpp: enumerate_kernels) against the ELF path
// (cubin.cpp) and recovery through driver-enumerated kernels (recover.cpp). Skip without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cubby/cubin.hpp"
#include "cubby/driver.hpp"
#include "cubby/nvrtc.hpp"
#include "cubby/recover.hpp"
#include "cubby_workloads.hpp"

namespace cubby {
namespace {

class GpuEnumerate : public ::testing::Test {
 protected:
  void SetUp() override {
    const Result<void> status = gpu_status();
    if (!status.ok()) GTEST_SKIP() << status.error().message;
  }

  // mdspan50 compiled for this GPU (once per process).
  static std::shared_ptr<const Entry> mdspan50() {
    static const std::shared_ptr<const Entry> entry = [] {
      const workloads::Workload w = workloads::mdspan50();
      CompileRequest request;
      request.source = w.source;
      request.name_expressions = w.name_expressions;
      request.options = w.options;
      request.arch = gpu_arch().value_or_throw();
      return std::make_shared<const Entry>(compile_nvrtc(request).value_or_throw());
    }();
    return entry;
  }
};

TEST_F(GpuEnumerate, DriverAndElfGiveTheSameKernelsOnMdspan50) {
  const auto entry = mdspan50();
  const CubinSymbols elf = read_cubin_symbols(entry->payload).value_or_throw();
  Module module(entry);
  const std::vector<std::string> driver = module.enumerate_kernels();
  EXPECT_EQ(driver, elf.kernels);
  // Every kernel NVRTC named is among them (48 scale instantiations + apply_scale_factor).
  std::size_t named = 0;
  for (const auto& [expression, lowered] : entry->lowered_names) {
    if (expression.front() == '&') continue;
    ++named;
    EXPECT_TRUE(std::binary_search(driver.begin(), driver.end(), lowered)) << expression;
  }
  EXPECT_EQ(named, 49u);
}

TEST_F(GpuEnumerate, RecoveryFromDriverKernelsMatchesNvrtc) {
  const auto entry = mdspan50();
  Module module(entry);
  CubinSymbols symbols;
  symbols.kernels = module.enumerate_kernels();
  // The driver cannot list variables: they come from the ELF symbol table.
  symbols.variables = read_cubin_symbols(entry->payload).value_or_throw().variables;
  const workloads::Workload w = workloads::mdspan50();
  for (const RecoveredName& name : recover_names(symbols, w.name_expressions)) {
    SCOPED_TRACE(name.expression);
    ASSERT_TRUE(name.resolved) << name.reason;
    EXPECT_EQ(name.mangled, entry->lowered_names.at(name.expression));
    if (!name.variable) {
      EXPECT_NE(module.function(name.expression), nullptr);
    }
  }
}

TEST_F(GpuEnumerate, EveryEnumeratedKernelCanBeLookedUp) {
  Module module(mdspan50());
  auto kernels = enumerate_kernels(module.native());
  ASSERT_TRUE(kernels.ok()) << kernels.error().message;
  ASSERT_FALSE(kernels->empty());
  EXPECT_FALSE(enumerate_kernels(nullptr).ok());
}

}  // namespace
}  // namespace cubby
