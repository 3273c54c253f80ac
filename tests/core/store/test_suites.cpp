// A store's suites (core/src/store/suites.cpp): manifests as warm reads them, one warm per suite.
#include <gtest/gtest.h>

#include "fake_backend.hpp"
#include "storage/local/manifests.hpp"
#include "store/suites.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using testing::fake_key;
using testing::FakeRemote;
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

// One process per store and suite reads ahead: the plan holds <stem>.read-ahead.lock until it is
// dropped, and a second plan meanwhile has no keys (another suite's has its own).
TEST(StoreSuites, OneReadAheadPlanPerStoreAndSuiteAtATime) {
  TempDir dir("suites");
  std::filesystem::create_directories(manifests_dir(dir.path()));
  FakeRemote fake;
  const auto upload = [&](const std::string& suite, std::uint8_t fill) {
    SuiteKeys keys{suite, {RecipeKey{{}, fake_key(fill)}, RecipeKey{{1}, fake_key(fill + 1)}}};
    ASSERT_TRUE(fake.tier->put(suite_keys_key(suite), encode_suite_keys(keys)).ok());
  };
  upload("suite", 10);
  upload("other", 20);
  // A value under the suite's key that names another suite is no plan.
  const std::string misfiled = encode_suite_keys(SuiteKeys{"not-it", {RecipeKey{{}, fake_key(9)}}});
  ASSERT_TRUE(fake.tier->put(suite_keys_key("misfiled"), misfiled).ok());

  std::optional<ReadAheadPlan> first = read_ahead_plan(dir.path(), "suite", *fake.tier);
  ASSERT_EQ(first->keys, (std::vector<Key>{fake_key(10), fake_key(11)}));
  EXPECT_TRUE(read_ahead_plan(dir.path(), "suite", *fake.tier).keys.empty());
  EXPECT_EQ(read_ahead_plan(dir.path(), "other", *fake.tier).keys.size(), 2u);
  EXPECT_TRUE(read_ahead_plan(dir.path(), "misfiled", *fake.tier).keys.empty());
  EXPECT_TRUE(read_ahead_plan(dir.path(), "absent", *fake.tier).keys.empty());

  // At stop, the fleet's keys are merged into the store's file; the lock goes with the plan.
  EXPECT_FALSE(std::filesystem::exists(suite_keys_path(dir.path(), "suite")));
  first->after();
  EXPECT_TRUE(std::filesystem::exists(suite_keys_path(dir.path(), "suite")));
  first.reset();
  EXPECT_EQ(read_ahead_plan(dir.path(), "suite", *fake.tier).keys.size(), 2u);
}

}  // namespace
}  // namespace cubby
