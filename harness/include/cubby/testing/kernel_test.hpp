// cubby::testing::KernelTest: a GoogleTest fixture for tests of NVRTC-compiled kernels.
//
//   class Scale : public cubby::testing::KernelTest {};
//   TEST_F(Scale, Compiles) {                 // compile-only: runs everywhere
//     auto module = compile(kSource, {"ns::scale<float>"}, {"-std=c++17"});
//     EXPECT_FALSE(module->lowered_name("ns::scale<float>").empty());
//   }
//   class ScaleGpu : public cubby::testing::GpuKernelTest {};   // skips without a GPU
//   TEST_F(ScaleGpu, Doubles) {
//     auto module = compile(kSource, {"ns::scale<float>"}, {"-std=c++17"});
//     cubby::testing::DeviceArray<float> data(host);
//     module->launch("ns::scale<float>", {1}, {256}, data.get(), int(host.size()));
//     EXPECT_EQ(data.to_host(), expected);
//   }
//
// Every program goes through the process's shared cache (session.hpp), so it is compiled at most
// once per process (and, with a warm store, never) and the loaded module is shared by every test.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cubby/cache.hpp"
#include "cubby/driver.hpp"
#include "cubby/nvrtc.hpp"
#include "cubby/testing/session.hpp"

namespace cubby::testing {

// A compiled program (from the store or NVRTC) whose kernels are found by name expression. The
// CUBIN is loaded into the GPU's context on the first kernel lookup, once.
class KernelModule {
 public:
  explicit KernelModule(CacheResult result) : result_(std::move(result)) {}

  const CacheResult& result() const { return result_; }
  const Entry& entry() const { return *result_.entry; }
  // NVRTC's exact lowered name of an expression given at compile time; throws name_not_found.
  const std::string& lowered_name(std::string_view name_expression) const {
    return result_.lowered_name(name_expression);
  }

  // The kernel of `name_expression` (loads the module first). Requires a GPU: throws cubby::Error
  // (driver_unavailable, no_gpu, cuda_error, name_not_found).
  CUfunction function(std::string_view name_expression) const;
  // The loaded module (loads it first). Requires a GPU.
  const Module& module() const;

  // Launches the kernel of `name_expression` with `args` (passed by value, as the kernel takes
  // them) and waits for it. Requires a GPU.
  template <class... Args>
  void launch(std::string_view name_expression, Dim3 grid, Dim3 block, const Args&... args) const {
    static_assert((std::is_trivially_copyable_v<Args> && ...),
                  "kernel arguments must be trivially copyable");
    std::array<void*, sizeof...(Args) + 1> pointers{
        const_cast<void*>(static_cast<const void*>(&args))..., nullptr};
    cubby::launch(function(name_expression), grid, block, pointers.data());
  }

 private:
  CacheResult result_;
  mutable std::once_flag load_once_;
  mutable std::unique_ptr<Module> module_;
};

class KernelTest : public ::testing::Test {
 public:
  // Compiles `source` through the shared store (cubby::testing::compile: a compile with
  // require_warm set fails the running test) and returns the module, shared by every test of
  // the process that compiles the same program. Throws cubby::Error (compile_failed with NVRTC's
  // log, ...): GoogleTest reports it as a failure of the test.
  static std::shared_ptr<const KernelModule> compile(std::string source,
                                                     std::vector<std::string> name_expressions,
                                                     std::vector<std::string> options = {});
  static std::shared_ptr<const KernelModule> compile(const CompileRequest& request);

  // Whether GPU tests can run here (see gpu_skip_reason() in session.hpp).
  static bool has_gpu();

  // Unloads and forgets every shared module (Environment::TearDown calls it).
  static void release_modules();
};

// KernelTest whose tests skip (GTEST_SKIP with the reason) on machines without a usable GPU.
class GpuKernelTest : public KernelTest {
 protected:
  void SetUp() override;
};

// In any test body: skips the test with the reason when no GPU can be used.
#define CUBBY_REQUIRE_GPU()                                                    \
  do {                                                                         \
    if (const auto cubby_skip_reason_ = ::cubby::testing::gpu_skip_reason()) { \
      GTEST_SKIP() << *cubby_skip_reason_;                                     \
    }                                                                          \
  } while (false)

// A typed device array (RAII) for launch tests. T must be trivially copyable.
template <class T>
class DeviceArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  explicit DeviceArray(std::size_t count) : count_(count), buffer_(bytes_for(count)) {}
  explicit DeviceArray(std::span<const T> host) : DeviceArray(host.size()) {
    copy_to_device(buffer_.get(), host.data(), host.size_bytes());
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(std::span<const T>(host)) {}

  // The device pointer, to pass to a kernel.
  CUdeviceptr get() const { return buffer_.get(); }
  std::size_t size() const { return count_; }
  std::vector<T> to_host() const {
    std::vector<T> host(count_);
    copy_to_host(host.data(), buffer_.get(), count_ * sizeof(T));
    return host;
  }

 private:
  // At least one byte: a zero-size allocation is an error for the driver.
  static std::size_t bytes_for(std::size_t count) { return count == 0 ? 1 : count * sizeof(T); }
  std::size_t count_;
  DeviceBuffer buffer_;
};

}  // namespace cubby::testing
