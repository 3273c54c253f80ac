// A store's suites (core/src/store/suites.cpp): manifests as warm reads them, one warm per suite.
#include <gtest/gtest.h>

#include "storage/local/manifests.hpp"
#include "store/suites.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using testing::TempDir;

TEST(StoreSuites, LoadSuiteReadsTheStoresManifestAndNothingWithoutOneOrARemote) {
  TempDir dir("suites");
  Config config;
  config.dir = dir.path();
  Recipe recipe;
  recipe.program_name = "one.cu";
  ASSERT_TRUE(save_manifest(dir.path(), Manifest{"suite", {recipe}}).ok());
  const auto loaded = load_suite(config, "suite");
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  EXPECT_EQ((*loaded)->recipes.at(0).program_name, "one.cu");
  const auto missing = load_suite(config, "other");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  EXPECT_EQ(list_suites(Store(dir.path())), std::vector<std::string>{"suite"});
}

TEST(StoreSuites, OneWarmLockPerSuiteAtATime) {
  TempDir dir("suites");
  const Store store(dir.path());
  std::filesystem::create_directories(dir.path() / "manifests");
  auto first = SuiteWarmLock::try_acquire(store, "suite");
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(SuiteWarmLock::try_acquire(store, "suite").has_value());
  EXPECT_TRUE(SuiteWarmLock::try_acquire(store, "other").has_value());
  first.reset();
  EXPECT_TRUE(SuiteWarmLock::try_acquire(store, "suite").has_value());
}

}  // namespace
}  // namespace cubby
