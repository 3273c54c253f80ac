// Tests of core/src/cuda/module_shelf.cpp: modules loaded ahead and handed over. Without a GPU
// (the usual CI machine) loads fail with the driver's status and nothing is kept; with one, a
// module is handed over once, to a thread of the context it was loaded in.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cubby/driver.hpp"
#include "cubby/nvrtc.hpp"
#include "cuda/module_shelf.hpp"
#include "gpu_skip.hpp"

namespace cubby {
namespace {

using testing::entry_of;

TEST(ModuleShelf, WhatIsNoCubinIsSkippedWithoutTheDriver) {
  ModuleShelf shelf;
  for (PayloadKind kind : {PayloadKind::ptx, PayloadKind::ltoir, PayloadKind::blob}) {
    const Result<bool> loaded = shelf.load("k", entry_of(kind, "payload"));
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_FALSE(*loaded);
  }
  const Result<bool> none = shelf.load("k", nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
  EXPECT_EQ(shelf.size(), 0u);
}

TEST(ModuleShelf, AKeyAskedForBeforeItsLoadIsNeverLoaded) {
  ModuleShelf shelf;
  EXPECT_FALSE(shelf.asked_any());
  EXPECT_EQ(shelf.take("k"), nullptr);
  EXPECT_TRUE(shelf.asked_any());
  // Skipped before the driver is asked, GPU or not: the thread that asked loads it itself.
  const Result<bool> loaded = shelf.load("k", entry_of(PayloadKind::cubin,
                                                       "\x7f"
                                                       "ELF"));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_FALSE(*loaded);
  EXPECT_EQ(shelf.size(), 0u);
}

TEST(ModuleShelfWithoutGpu, ALoadFailsWithTheDriversStatusAndKeepsNothing) {
  SKIP_IF_GPU();
  ModuleShelf shelf;
  const Result<bool> loaded = shelf.load("k", entry_of(PayloadKind::cubin,
                                                       "\x7f"
                                                       "ELF"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code, gpu_status().error().code);
  EXPECT_EQ(shelf.size(), 0u);
  EXPECT_EQ(shelf.take("k"), nullptr);
}

constexpr const char* kSource = R"(
namespace t {
template <class T> __global__ void fill(T* data, T value) { data[threadIdx.x] = value; }
}  // namespace t
)";

std::shared_ptr<const Entry> compile_for(const std::string& arch) {
  CompileRequest request;
  request.source = kSource;
  request.name_expressions = {"t::fill<int>"};
  request.arch = arch;
  return std::make_shared<const Entry>(compile_nvrtc(request).value_or_throw());
}

TEST(ModuleShelfWithGpu, AModuleIsHandedOverOnceToAThreadOfItsContext) {
  SKIP_IF_NO_GPU();
  ModuleShelf shelf;
  const std::shared_ptr<const Entry> entry = compile_for(gpu_arch().value_or_throw());
  const Result<bool> loaded = shelf.load("k", entry);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_TRUE(*loaded);
  const Result<bool> again = shelf.load("k", entry);  // loaded already: skipped
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  EXPECT_EQ(shelf.size(), 1u);

  // A thread without a current context gets nothing; the module stays for the right one.
  CUmodule elsewhere = nullptr;
  std::thread([&] { elsewhere = shelf.take("k"); }).join();
  EXPECT_EQ(elsewhere, nullptr);
  EXPECT_EQ(shelf.size(), 1u);

  CUmodule module = shelf.take("k");  // this thread loaded it: its context is current
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(shelf.size(), 0u);
  EXPECT_EQ(shelf.take("k"), nullptr);  // handed over once
  const Result<std::vector<std::string>> kernels = enumerate_kernels(module);
  ASSERT_TRUE(kernels.ok()) << kernels.error().message;
  EXPECT_EQ(*kernels, std::vector<std::string>{entry->lowered_names.at("t::fill<int>")});
  unload_module(module);  // the caller's, as it owns it now
}

TEST(ModuleShelfWithGpu, ACubinForAnotherArchitectureIsRefusedAndNotKept) {
  SKIP_IF_NO_GPU();
  const std::string arch = gpu_arch().value_or_throw();
  const std::string other = std::stoi(arch.substr(3)) >= 90 ? "sm_80" : "sm_90";
  ModuleShelf shelf;
  const Result<bool> loaded = shelf.load("k", compile_for(other));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code, Errc::cuda_error);
  EXPECT_NE(loaded.error().message.find("cuModuleLoadData"), std::string::npos)
      << loaded.error().message;
  EXPECT_EQ(shelf.size(), 0u);
}

}  // namespace
}  // namespace cubby
