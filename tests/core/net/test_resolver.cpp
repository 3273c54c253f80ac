// Name resolution bounded by the deadline (core/src/net/resolver.cpp): a resolver that hangs is
// left behind at the deadline, numeric addresses need none, the system's answers for localhost.
#include <gtest/gtest.h>

#include "hanging_resolver.hpp"
#include "net/resolver.hpp"

namespace cubby {
namespace {

using Clock = std::chrono::steady_clock;
using testing::HangingResolver;

TEST(ResolveBounded, AResolverThatHangsIsLeftBehindAtTheDeadline) {
  HangingResolver hanging;
  bool timed_out = false;
  const auto start = Clock::now();
  auto resolved =
      resolve_bounded("cache.example.invalid", 6379, start + std::chrono::milliseconds(100),
                      hanging.resolver(), timed_out);
  const auto took = Clock::now() - start;
  ASSERT_FALSE(resolved);
  EXPECT_TRUE(timed_out);
  EXPECT_EQ(resolved.error().code, Errc::io);
  EXPECT_GE(took, std::chrono::milliseconds(100));
  EXPECT_LT(took, std::chrono::seconds(5));  // the deadline, not the resolver, ended it
  EXPECT_EQ(hanging.calls(), 1);
}

TEST(ResolveBounded, NumericAddressesNeedNoResolver) {
  HangingResolver hanging;
  bool timed_out = false;
  for (const char* host : {"127.0.0.1", "::1"}) {
    auto resolved = resolve_bounded(host, 6379, Clock::now() + std::chrono::seconds(5),
                                    hanging.resolver(), timed_out);
    ASSERT_TRUE(resolved) << resolved.error().message;
    EXPECT_EQ(resolved->size(), 1u);
  }
  EXPECT_EQ(hanging.calls(), 0);
}

TEST(ResolveBounded, TheSystemResolverAnswersForLocalhost) {
  bool timed_out = false;
  auto resolved = resolve_bounded("localhost", 6379, Clock::now() + std::chrono::seconds(10),
                                  nullptr, timed_out);
  ASSERT_TRUE(resolved) << resolved.error().message;
  EXPECT_FALSE(resolved->empty());
}

TEST(NumericAddress, AddressesAreConvertedAndNamesAreNot) {
  EXPECT_TRUE(numeric_address("127.0.0.1", 80));
  EXPECT_TRUE(numeric_address("::1", 80));
  EXPECT_FALSE(numeric_address("[::1]", 80));  // brackets belong to URLs, not addresses
  EXPECT_FALSE(numeric_address("localhost", 80));
}

}  // namespace
}  // namespace cubby
