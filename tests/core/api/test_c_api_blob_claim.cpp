// Tests of blob claims (cubby_blob_get_or_claim, cubby_blob_release; Cache::load_or_claim_blob):
// one producer per blob across processes. Two handles on one store stand for two processes (their
// per-key locks are separate open files, so they exclude each other as processes do).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cubby/cubby.h"
#include "forked_owner.hpp"
#include "test_support.hpp"

namespace {

using cubby::testing::ScopedEnv;
using cubby::testing::TempDir;
using Clock = std::chrono::steady_clock;

struct Lookup {
  int status = -1;
  bool hit = false;
  int claimed = -1;
  std::string payload;
};

Lookup get_or_claim(cubby_cache* cache, const char* name, unsigned wait_ms) {
  Lookup lookup;
  cubby_result* result = nullptr;
  lookup.status = cubby_blob_get_or_claim(cache, "cupy", name, wait_ms, &result, &lookup.claimed);
  if (result != nullptr) {
    lookup.hit = true;
    size_t size = 0;
    const void* data = cubby_result_payload(result, &size);
    lookup.payload.assign(static_cast<const char*>(data), size);
    cubby_result_free(result);
  }
  return lookup;
}

double counter(cubby_cache* cache, const char* name) {
  const char* json = cubby_stats_json(cache);
  return json == nullptr ? -1 : nlohmann::json::parse(json)[name].get<double>();
}

class CApiBlobClaimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cubby_open(dir_.path().c_str(), &first_), CUBBY_OK) << cubby_last_error();
    ASSERT_EQ(cubby_open(dir_.path().c_str(), &second_), CUBBY_OK) << cubby_last_error();
  }
  void TearDown() override {
    cubby_close(first_);
    cubby_close(second_);
  }

  ScopedEnv no_stats_file_{"CUBBY_STATS_FILE", std::nullopt};
  ScopedEnv enabled_{"CUBBY_DISABLE", std::nullopt};
  ScopedEnv writable_{"CUBBY_READ_ONLY", std::nullopt};
  TempDir dir_{"c-api-blob-claim"};
  cubby_cache* first_ = nullptr;
  cubby_cache* second_ = nullptr;
};

// A claim held through a forked child outlived its owner (the child shared the lock's open file):
// waiters waited their whole bound (120 s in the CuPy adapter). The owner claims, forks a child
// that sleeps, and dies: the claim is free at once (a waiter that waits 0 ms gets it).
TEST_F(CApiBlobClaimTest, AClaimEndsWithItsOwnerEvenWhenAForkedChildOutlivesIt) {
  const cubby::testing::OrphanedChild child(
      [&] { return get_or_claim(first_, "k", 0).claimed == 1; }, [] { return true; });
  ASSERT_TRUE(child.ok());
  const Lookup waiter = get_or_claim(second_, "k", 0);
  ASSERT_EQ(waiter.status, CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(waiter.claimed, 1) << "the claim outlived its owner in its forked child";
}

TEST_F(CApiBlobClaimTest, AWaiterGetsTheBlobTheClaimantStoresInsteadOfProducingItAgain) {
  const Lookup claimant = get_or_claim(first_, "k", 0);
  ASSERT_EQ(claimant.status, CUBBY_OK) << cubby_last_error();
  EXPECT_FALSE(claimant.hit);
  EXPECT_EQ(claimant.claimed, 1);
  auto waiter = std::async(std::launch::async, [&] { return get_or_claim(second_, "k", 30000); });
  // The waiter blocks on the claim until the blob is stored.
  EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  ASSERT_EQ(cubby_blob_put(first_, "cupy", "k", "kernel", 6, 0), CUBBY_OK) << cubby_last_error();
  const Lookup waited = waiter.get();
  ASSERT_EQ(waited.status, CUBBY_OK);
  EXPECT_TRUE(waited.hit);
  EXPECT_EQ(waited.payload, "kernel");
  EXPECT_EQ(counter(second_, "waited_for_others"), 1);
  EXPECT_EQ(counter(second_, "hits_disk"), 1);
  EXPECT_EQ(counter(second_, "misses"), 0);
}

TEST_F(CApiBlobClaimTest, AWaitThatExpiresIsAMissWithoutAClaim) {
  ASSERT_EQ(get_or_claim(first_, "k", 0).claimed, 1);
  ::testing::internal::CaptureStderr();
  const auto start = Clock::now();
  const Lookup late = get_or_claim(second_, "k", 200);
  const auto waited = Clock::now() - start;
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(late.hit);
  EXPECT_EQ(late.claimed, 0);
  EXPECT_GE(waited, std::chrono::milliseconds(150));
  EXPECT_NE(said.find("producing it here too"), std::string::npos) << said;
  EXPECT_EQ(counter(second_, "misses"), 1);
}

TEST_F(CApiBlobClaimTest, AReleasedOrClosedClaimLetsTheNextAskerClaim) {
  ASSERT_EQ(get_or_claim(first_, "k", 0).claimed, 1);
  EXPECT_EQ(get_or_claim(second_, "k", 0).claimed, 0);  // held
  ASSERT_EQ(cubby_blob_release(first_, "cupy", "k"), CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(get_or_claim(second_, "k", 0).claimed, 1);
  cubby_close(second_);  // its claim ends with the handle
  second_ = nullptr;
  EXPECT_EQ(get_or_claim(first_, "k", 0).claimed, 1);
  EXPECT_EQ(cubby_blob_release(first_, "cupy", "never-claimed"), CUBBY_OK);
}

TEST_F(CApiBlobClaimTest, AStoredBlobIsAHitWithNoClaim) {
  ASSERT_EQ(cubby_blob_put(first_, "cupy", "k", "x", 1, 0), CUBBY_OK);
  const Lookup found = get_or_claim(second_, "k", 0);
  EXPECT_TRUE(found.hit);
  EXPECT_EQ(found.claimed, 0);
  EXPECT_EQ(counter(second_, "waited_for_others"), 0);
}

TEST_F(CApiBlobClaimTest, AReadOnlyStoreNeverClaims) {
  ScopedEnv read_only{"CUBBY_READ_ONLY", "1"};
  cubby_cache* reader = nullptr;
  ASSERT_EQ(cubby_open(dir_.path().c_str(), &reader), CUBBY_OK) << cubby_last_error();
  const Lookup lookup = get_or_claim(reader, "k", 0);
  EXPECT_EQ(lookup.status, CUBBY_OK);
  EXPECT_FALSE(lookup.hit);
  EXPECT_EQ(lookup.claimed, 0);
  cubby_close(reader);
  EXPECT_EQ(get_or_claim(first_, "k", 0).claimed, 1);
}

TEST_F(CApiBlobClaimTest, BadArgumentsAreInvalid) {
  cubby_result* result = nullptr;
  int claimed = 7;
  EXPECT_EQ(cubby_blob_get_or_claim(first_, "cupy", "k", 0, nullptr, &claimed),
            CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_blob_get_or_claim(first_, nullptr, "k", 0, &result, &claimed),
            CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(claimed, 0);
  EXPECT_EQ(cubby_blob_get_or_claim(nullptr, "cupy", "k", 0, &result, &claimed),
            CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_blob_get_or_claim(first_, "cupy", "k", 0, &result, nullptr), CUBBY_OK);
  EXPECT_EQ(cubby_blob_release(first_, "cupy", nullptr), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_blob_release(nullptr, "cupy", "k"), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_blob_release(first_, "bad/ns", "k"), CUBBY_ERROR_INVALID_ARGUMENT);
}

}  // namespace
