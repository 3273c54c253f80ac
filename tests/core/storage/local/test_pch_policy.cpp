// When and where a Cache's compiles use precompiled headers
// (core/src/storage/local/pch_policy.cpp).
#include <gtest/gtest.h>

#include <filesystem>

#include "storage/local/pch_policy.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using testing::TempDir;

Config config_in(const TempDir& dir) {
  Config config;
  config.dir = dir.path();
  config.pch = true;
  return config;
}

CompileRequest request_with(std::string option) {
  CompileRequest request;
  request.source = "__global__ void k() {}";
  request.arch = "sm_90";
  request.options = {std::move(option)};
  return request;
}

TEST(PchPolicy, TheFirstCompileOfAFingerprintGoesWithoutThenEachGetsItsOwnFolder) {
  TempDir dir("pch-policy");
  PchPolicy policy(config_in(dir));
  const KeyInputs inputs;
  EXPECT_TRUE(policy.folder_for(request_with("-DA"), inputs).empty());
  const std::filesystem::path a = policy.folder_for(request_with("-DA"), inputs);
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(std::filesystem::is_directory(a));
  EXPECT_EQ(policy.folder_for(request_with("-DA"), inputs), a);
  EXPECT_TRUE(policy.folder_for(request_with("-DB"), inputs).empty());  // another fingerprint
  EXPECT_NE(policy.folder_for(request_with("-DB"), inputs), a);
}

TEST(PchPolicy, EagerSavesFromTheFirstCompile) {
  TempDir dir("pch-policy");
  Config config = config_in(dir);
  config.pch_eager = true;
  PchPolicy policy(config);
  EXPECT_FALSE(policy.folder_for(request_with("-DA"), KeyInputs{}).empty());
}

TEST(PchPolicy, OffWithoutPchForAReadOnlyStoreAndAfterNvrtcFailedToUseIt) {
  TempDir dir("pch-policy");
  Config config = config_in(dir);
  config.pch_eager = true;
  Config off = config;
  off.pch = false;
  EXPECT_TRUE(PchPolicy(off).folder_for(request_with("-DA"), KeyInputs{}).empty());
  Config read_only = config;
  read_only.read_only = true;
  EXPECT_TRUE(PchPolicy(read_only).folder_for(request_with("-DA"), KeyInputs{}).empty());
  KeyInputs unresolvable;
  unresolvable.unresolvable = {"#include MACRO"};
  PchPolicy policy(config);
  EXPECT_TRUE(policy.folder_for(request_with("-DA"), unresolvable).empty());
  ASSERT_FALSE(policy.folder_for(request_with("-DA"), KeyInputs{}).empty());
  PchOutcome failed;
  failed.failed = true;
  failed.why = "test";
  policy.note(failed);
  EXPECT_TRUE(policy.folder_for(request_with("-DA"), KeyInputs{}).empty());
}

}  // namespace
}  // namespace cubby
