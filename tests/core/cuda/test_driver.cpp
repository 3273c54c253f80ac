// Tests of core/src/cuda/driver.cpp: the lazily loaded CUDA driver and Module.
// Without a driver (the usual CI machine) every entry point must fail cleanly with
// driver_unavailable; with a GPU the same entry points must work. Each test checks one case and
// skips the other.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "cubby/driver.hpp"
#include "cubby/nvrtc.hpp"

namespace cubby {
namespace {

bool have_gpu() { return gpu_status().ok(); }

#define SKIP_IF_GPU() \
  if (have_gpu()) GTEST_SKIP() << "a GPU is present: no-GPU behaviour not observable here"
#define SKIP_IF_NO_GPU() \
  if (!have_gpu()) GTEST_SKIP() << gpu_status().error().message

std::shared_ptr<const Entry> entry_of(PayloadKind kind, std::string payload) {
  auto entry = std::make_shared<Entry>();
  entry->kind = kind;
  entry->payload = std::move(payload);
  entry->lowered_names = {{"ns::k<int>", "_ZN2ns1kIiEEvv"}};
  return entry;
}

// Runs `body`, which must throw cubby::Error, and returns it.
template <class Body>
Error error_of(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "expected cubby::Error, nothing was thrown";
  return Error(Errc::io, "nothing thrown");
}

// ----- without a driver -----

TEST(DriverWithoutGpu, StatusNamesTheLibraryAndSaysWhatToDo) {
  SKIP_IF_GPU();
  const Result<void> status = gpu_status();
  ASSERT_FALSE(status.ok());
  const std::string& message = status.error().message;
  if (status.error().code == Errc::no_gpu) {
    // A driver is installed but no device is usable (a GPU-less machine with the driver).
    EXPECT_TRUE(message.find("cuInit failed") != std::string::npos ||
                message.find("no CUDA device") != std::string::npos)
        << message;
    return;
  }
  // No libcuda.so.1 at all (the CI machine).
  EXPECT_EQ(status.error().code, Errc::driver_unavailable) << message;
  EXPECT_NE(message.find("libcuda.so.1 could not be loaded ("), std::string::npos) << message;
  EXPECT_NE(message.find("GPU tests skip"), std::string::npos) << message;
}

TEST(DriverWithoutGpu, StatusIsMemoized) {
  SKIP_IF_GPU();
  const Result<void> first = gpu_status();
  ASSERT_FALSE(first.ok());
  for (int i = 0; i < 3; ++i) {
    const Result<void> again = gpu_status();
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().code, first.error().code);
    EXPECT_EQ(again.error().message, first.error().message);
  }
}

TEST(DriverWithoutGpu, ArchAndContextFailWithTheStatus) {
  SKIP_IF_GPU();
  const Result<std::string> arch = gpu_arch();
  ASSERT_FALSE(arch.ok());
  EXPECT_EQ(arch.error().code, gpu_status().error().code);
  EXPECT_EQ(arch.error().message, gpu_status().error().message);
  const Result<void> context = ensure_context();
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.error().code, gpu_status().error().code);
}

TEST(DriverWithoutGpu, ModuleConstructionThrowsTheStatus) {
  SKIP_IF_GPU();
  const Error error = error_of([] {
    Module module(entry_of(PayloadKind::cubin,
                           "\x7f"
                           "ELF"));
  });
  EXPECT_EQ(error.code(), gpu_status().error().code);
  EXPECT_NE(std::string(error.what()).find("libcuda.so.1"), std::string::npos) << error.what();
  const Error ptx = error_of([] { Module module(entry_of(PayloadKind::ptx, ".version 8.0")); });
  EXPECT_EQ(ptx.code(), gpu_status().error().code);
}

TEST(DriverWithoutGpu, MemoryAndLaunchHelpersThrow) {
  SKIP_IF_GPU();
  const Errc expected = gpu_status().error().code;
  EXPECT_EQ(error_of([] { static_cast<void>(device_alloc(16)); }).code(), expected);
  EXPECT_EQ(error_of([] { DeviceBuffer buffer(16); }).code(), expected);
  int value = 7;
  EXPECT_EQ(error_of([&] { copy_to_device(1, &value, sizeof value); }).code(), expected);
  EXPECT_EQ(error_of([&] { copy_to_host(&value, 1, sizeof value); }).code(), expected);
  EXPECT_EQ(value, 7);
  // A non-null handle that cannot come from the driver: launch must refuse before using it.
  auto* fake = reinterpret_cast<CUfunction>(static_cast<std::uintptr_t>(0x10));
  EXPECT_EQ(error_of([&] { launch(fake, Dim3{}, Dim3{}, nullptr); }).code(), expected);
  // Still failing the same way after all those calls.
  EXPECT_EQ(gpu_status().error().code, expected);
}

// ----- argument checks (no driver needed: they come before any driver call) -----

TEST(DriverArguments, ModuleRejectsLtoIrWithAHint) {
  const Error error = error_of([] { Module module(entry_of(PayloadKind::ltoir, "ltoir bytes")); });
  EXPECT_EQ(error.code(), Errc::invalid_argument);
  EXPECT_NE(std::string(error.what()).find("LTO-IR must be linked with nvJitLink first"),
            std::string::npos)
      << error.what();
}

TEST(DriverArguments, ModuleRejectsNullAndEmptyEntries) {
  EXPECT_EQ(error_of([] { Module module(nullptr); }).code(), Errc::invalid_argument);
  EXPECT_EQ(error_of([] { Module module(entry_of(PayloadKind::cubin, "")); }).code(),
            Errc::invalid_argument);
}

TEST(DriverArguments, LaunchRejectsANullKernel) {
  EXPECT_EQ(error_of([] { launch(nullptr, Dim3{}, Dim3{}, nullptr); }).code(),
            Errc::invalid_argument);
}

TEST(DriverArguments, ZeroByteAllocationIsRejected) {
  EXPECT_EQ(error_of([] { static_cast<void>(device_alloc(0)); }).code(), Errc::invalid_argument);
}

// ----- with a GPU -----

constexpr const char* kTinySource = R"(
namespace t {
__device__ int answer = 42;
template <class T> __global__ void add(T* data, T amount, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) data[i] += amount;
}
}  // namespace t
)";

std::shared_ptr<const Entry> compile_tiny() {
  CompileRequest request;
  request.source = kTinySource;
  request.name_expressions = {"t::add<int>", "&t::answer"};
  request.arch = gpu_arch().value_or_throw();
  return std::make_shared<const Entry>(compile_nvrtc(request).value_or_throw());
}

TEST(DriverWithGpu, StatusArchAndContext) {
  SKIP_IF_NO_GPU();
  const Result<std::string> arch = gpu_arch();
  ASSERT_TRUE(arch.ok()) << arch.error().message;
  EXPECT_TRUE(std::regex_match(*arch, std::regex("sm_[1-9][0-9]+"))) << *arch;
  const Result<void> context = ensure_context();
  EXPECT_TRUE(context.ok()) << context.error().message;
  const Result<void> again = ensure_context();  // already current: nothing to do
  EXPECT_TRUE(again.ok()) << again.error().message;
}

TEST(DriverWithGpu, MemoryRoundTrip) {
  SKIP_IF_NO_GPU();
  const std::vector<int> host = {1, 2, 3, 5, 8, 13};
  DeviceBuffer buffer(host.size() * sizeof(int));
  ASSERT_NE(buffer.get(), 0u);
  copy_to_device(buffer.get(), host.data(), buffer.bytes());
  std::vector<int> back(host.size(), 0);
  copy_to_host(back.data(), buffer.get(), buffer.bytes());
  EXPECT_EQ(back, host);
}

TEST(DriverWithGpu, ModuleFunctionVariableAndLaunch) {
  SKIP_IF_NO_GPU();
  Module module(compile_tiny());
  ASSERT_NE(module.native(), nullptr);

  const DeviceVariable with_ampersand = module.variable("&t::answer");
  const DeviceVariable without = module.variable("t::answer");
  EXPECT_EQ(with_ampersand.pointer, without.pointer);
  ASSERT_EQ(with_ampersand.bytes, sizeof(int));
  int answer = 0;
  copy_to_host(&answer, with_ampersand.pointer, sizeof answer);
  EXPECT_EQ(answer, 42);

  std::vector<int> host = {10, 20, 30, 40, 50};
  DeviceBuffer buffer(host.size() * sizeof(int));
  copy_to_device(buffer.get(), host.data(), buffer.bytes());
  CUdeviceptr data = buffer.get();
  int amount = 5;
  int n = static_cast<int>(host.size());
  void* args[] = {&data, &amount, &n};
  launch(module.function("t::add<int>"), Dim3{1}, Dim3{32}, args);
  copy_to_host(host.data(), buffer.get(), buffer.bytes());
  EXPECT_EQ(host, (std::vector<int>{15, 25, 35, 45, 55}));
}

TEST(DriverWithGpu, UnknownExpressionsThrowNameNotFound) {
  SKIP_IF_NO_GPU();
  Module module(compile_tiny());
  const Error kernel = error_of([&] { static_cast<void>(module.function("t::add<float>")); });
  EXPECT_EQ(kernel.code(), Errc::name_not_found);
  EXPECT_NE(std::string(kernel.what()).find("t::add<int>"), std::string::npos) << kernel.what();
  EXPECT_EQ(error_of([&] { static_cast<void>(module.variable("&t::question")); }).code(),
            Errc::name_not_found);
  // A variable's expression is known, but it is not a kernel.
  EXPECT_EQ(error_of([&] { static_cast<void>(module.function("&t::answer")); }).code(),
            Errc::cuda_error);
}

TEST(DriverWithGpu, MoveKeepsTheModuleLoaded) {
  SKIP_IF_NO_GPU();
  Module first(compile_tiny());
  const CUmodule native = first.native();
  Module second(std::move(first));
  EXPECT_EQ(second.native(), native);
  // NOLINTNEXTLINE(bugprone-use-after-move): the moved-from state is part of the contract
  EXPECT_EQ(first.native(), nullptr);
  EXPECT_EQ(error_of([&] { static_cast<void>(first.function("t::add<int>")); }).code(),
            Errc::invalid_argument);
  Module third(compile_tiny());
  third = std::move(second);  // unloads third's own module
  EXPECT_EQ(third.native(), native);
  EXPECT_NE(third.function("t::add<int>"), nullptr);
}

TEST(DriverWithGpu, BadPayloadIsACudaError) {
  SKIP_IF_NO_GPU();
  const Error error = error_of([] { Module module(entry_of(PayloadKind::cubin, "not an ELF")); });
  EXPECT_EQ(error.code(), Errc::cuda_error);
  EXPECT_NE(std::string(error.what()).find("cuModuleLoadData"), std::string::npos) << error.what();
}

}  // namespace
}  // namespace cubby
