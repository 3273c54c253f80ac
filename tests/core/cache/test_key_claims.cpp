// Single flight per key (core/src/cache/key_claims.cpp): stripes and held claims.
#include <gtest/gtest.h>

#include "cache/key_claims.hpp"
#include "format/blob.hpp"
#include "storage/local/disk.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using testing::TempDir;

TEST(KeyClaims, AClaimIsHeldUntilReleasedAndHoldsItsLock) {
  TempDir dir("claims");
  const Key key = blob_key("cupy", "k");
  const auto path = DiskTier(dir.path()).lock_path_of(key);
  KeyClaims claims;
  EXPECT_FALSE(claims.holds(key));
  auto lock = FileLock::try_acquire(path);
  ASSERT_TRUE(lock.ok() && lock->has_value());
  claims.hold(key, std::move(**lock));
  EXPECT_TRUE(claims.holds(key));
  EXPECT_FALSE(FileLock::try_acquire(path)->has_value());  // still held by the claim
  claims.release(key);
  EXPECT_FALSE(claims.holds(key));
  EXPECT_TRUE(FileLock::try_acquire(path)->has_value());
  claims.release(key);  // no claim: nothing happens
}

TEST(KeyClaims, OneKeyAlwaysHasOneStripe) {
  KeyClaims claims;
  const Key key = blob_key("cupy", "k");
  EXPECT_EQ(&claims.stripe(key), &claims.stripe(key));
}

}  // namespace
}  // namespace cubby
