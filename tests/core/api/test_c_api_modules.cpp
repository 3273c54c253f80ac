// The C API's modules loaded ahead (core/src/api/c_api_modules.cpp, through cubby.h only): a
// suite's recorded kernels read ahead and loaded by cubby_preload_modules, handed over once by
// cubby_take_module. Without a GPU the preload fails with the driver's status and nothing is
// handed over; the GPU cases skip there.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cubby/cubby.h"

namespace {

namespace fs = std::filesystem;

constexpr const char* kSource = R"(extern "C" __global__ void k(int* out) { *out = 3; })";
constexpr const char* kSuite = "c-api-modules";

// Whether cubby can use a GPU here (the preload's own answer on an empty suite), and why not.
bool have_gpu(std::string* why) {
  const fs::path dir =
      fs::temp_directory_path() / ("cubby_test_gpu_probe_" + std::to_string(::getpid()));
  cubby_cache* cache = nullptr;
  if (cubby_open(dir.c_str(), &cache) != CUBBY_OK) return false;
  const int status = cubby_preload_modules(cache, nullptr, nullptr);
  if (why != nullptr) *why = cubby_last_error();
  cubby_close(cache);
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return status == CUBBY_OK;
}

class CApiModules : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cubby_test_c_api_modules_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    ::setenv("CUBBY_SUITE", kSuite, 1);
  }
  void TearDown() override {
    ::unsetenv("CUBBY_SUITE");
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  cubby_cache* open() {
    cubby_cache* cache = nullptr;
    EXPECT_EQ(cubby_open(dir_.c_str(), &cache), CUBBY_OK) << cubby_last_error();
    return cache;
  }

  // The key of kSource for `arch` through `cache` (compiled or served).
  static std::string compile(cubby_cache* cache, const char* arch) {
    cubby_result* result = nullptr;
    EXPECT_EQ(cubby_compile(cache, kSource, "k.cu", nullptr, 0, nullptr, 0, arch, &result),
              CUBBY_OK)
        << cubby_last_error();
    std::string key = result != nullptr ? cubby_result_key(result) : "";
    cubby_result_free(result);
    return key;
  }

  fs::path dir_;
};

TEST_F(CApiModules, TakeChecksItsArgumentsAndGivesNothingThatWasNotLoaded) {
  cubby_cache* cache = open();
  void* module = reinterpret_cast<void*>(1);
  EXPECT_EQ(cubby_take_module(cache, "0123456789abcdef0123456789abcdef", &module), CUBBY_OK);
  EXPECT_EQ(module, nullptr);
  EXPECT_EQ(cubby_take_module(cache, "0123456789abcdef0123456789abcdef", nullptr),
            CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cubby_last_error()).find("module is NULL"), std::string::npos);
  EXPECT_EQ(cubby_take_module(cache, nullptr, &module), CUBBY_ERROR_INVALID_ARGUMENT);
  cubby_close(cache);
  EXPECT_EQ(cubby_take_module(cache, "0123456789abcdef0123456789abcdef", &module),
            CUBBY_ERROR_INVALID_ARGUMENT);  // a closed handle
  EXPECT_EQ(cubby_preload_modules(cache, nullptr, nullptr), CUBBY_ERROR_INVALID_ARGUMENT);
}

TEST_F(CApiModules, WithoutAGpuThePreloadSaysWhyAndLoadsNothing) {
  std::string why;
  if (have_gpu(&why)) GTEST_SKIP() << "a GPU is present: no-GPU behaviour not observable here";
  cubby_cache* first = open();
  const std::string key = compile(first, "sm_90");  // recorded for the suite at close
  cubby_close(first);

  cubby_cache* cache = open();
  uint64_t read = 0;
  ASSERT_EQ(cubby_read_ahead(cache, nullptr, &read, nullptr), CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(read, 1u);
  uint64_t loaded = 7;
  const int status = cubby_preload_modules(cache, nullptr, &loaded);
  EXPECT_TRUE(status == CUBBY_ERROR_DRIVER_UNAVAILABLE || status == CUBBY_ERROR_NO_GPU) << status;
  EXPECT_EQ(loaded, 0u);
  EXPECT_NE(std::string(cubby_last_error()), "");
  void* module = nullptr;
  EXPECT_EQ(cubby_take_module(cache, key.c_str(), &module), CUBBY_OK);
  EXPECT_EQ(module, nullptr);
  EXPECT_EQ(compile(cache, "sm_90"), key);  // the run goes on as without the preload
  cubby_close(cache);
}

TEST_F(CApiModules, TheSuitesKernelsAreLoadedAheadAndHandedOverOnce) {
  std::string why;
  if (!have_gpu(&why)) GTEST_SKIP() << why;
  cubby_cache* first = open();
  const std::string key = compile(first, nullptr);  // this GPU's architecture
  cubby_close(first);

  cubby_cache* cache = open();
  uint64_t loaded = 0;
  ASSERT_EQ(cubby_preload_modules(cache, nullptr, &loaded), CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(loaded, 1u);
  EXPECT_EQ(compile(cache, nullptr), key);
  void* module = nullptr;
  ASSERT_EQ(cubby_take_module(cache, key.c_str(), &module), CUBBY_OK);
  ASSERT_NE(module, nullptr);
  void* again = nullptr;
  EXPECT_EQ(cubby_take_module(cache, key.c_str(), &again), CUBBY_OK);
  EXPECT_EQ(again, nullptr);  // handed over once
  // Loaded already, then asked for: a second preload loads nothing.
  EXPECT_EQ(cubby_preload_modules(cache, nullptr, &loaded), CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(loaded, 0u);
  cubby_close(cache);
  // A handle whose run asked for a module already (it uses the GPU): the preload ends at once.
  cubby_cache* late = open();
  ASSERT_EQ(cubby_take_module(late, "0123456789abcdef0123456789abcdef", &again), CUBBY_OK);
  loaded = 7;
  EXPECT_EQ(cubby_preload_modules(late, nullptr, &loaded), CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(loaded, 0u);
  cubby_close(late);
  // The module is the caller's: it outlives the handle and is unloaded by the caller.
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(driver, nullptr);
  using Unload = int (*)(void*);
  auto unload = reinterpret_cast<Unload>(::dlsym(driver, "cuModuleUnload"));
  ASSERT_NE(unload, nullptr);
  EXPECT_EQ(unload(module), 0);
}

}  // namespace
