// The remote tier as composed (core/src/storage/remote/remote.cpp) over an in-memory backend, and
// its factory: the URL's scheme picks the backend, which the same wrappers (envelope, breaker,
// write-behind) wrap, so a second backend reuses them; an unknown scheme is a warning.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "fake_backend.hpp"
#include "storage/remote/redis/redis_url.hpp"
#include "storage/remote/remote.hpp"

namespace cubby {
namespace {

using testing::fake_key;
using testing::FakeBackend;
using testing::FakeRemote;

RemoteOptions options(std::string location, std::string secret = "",
                      std::uint64_t max_entry = 64ull << 20) {
  RemoteOptions out;
  out.location = std::move(location);
  out.secret = std::move(secret);
  out.max_entry = max_entry;
  return out;
}

TEST(RemoteTier, WrapsTheBackendInEnvelopeBreakerAndWriteBehind) {
  FakeRemote remote(options("fake://store", "alpha", 8));
  RemoteTier& tier = *remote.tier;
  ASSERT_TRUE(tier.put(fake_key(1), "entry"));
  EXPECT_EQ(remote.stored(fake_key(1)).substr(0, 8), "CBYSIG01");  // the envelope
  EXPECT_FALSE(tier.put(fake_key(2), "123456789"));                // its size limit
  tier.put_later(fake_key(3), "later");                            // write-behind
  tier.drain(std::chrono::seconds(30));
  auto later = tier.get(fake_key(3));
  ASSERT_TRUE(later && later->has_value());
  EXPECT_EQ(**later, "later");
  remote.state->failure = fail(Errc::io, "fake: down");  // the breaker
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(tier.get(fake_key(1)));
  (void)::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(tier.get(fake_key(1)));
  EXPECT_EQ(remote.state->gets, 2);
  const Stats counted = tier.counters();
  EXPECT_EQ(counted.remote_skipped, 1u);
  EXPECT_EQ(counted.remote_writes_dropped, 1u);
}

TEST(RemoteTier, ReadModeQueuesNothingAndCountsNothing) {
  FakeRemote remote;
  remote.state->writable = false;
  remote.tier->put_later(fake_key(1), "bytes");
  remote.tier->drain(std::chrono::seconds(1));
  EXPECT_EQ(remote.state->puts, 0);
  EXPECT_EQ(remote.tier->counters().remote_writes_dropped, 0u);
}

TEST(RemoteTier, AFailedConnectionOpenedAheadOpensTheBreaker) {
  FakeRemote remote;
  remote.state->connect_failure = fail(Errc::io, "fake: cannot connect");
  ::testing::internal::CaptureStderr();
  remote.tier->connect_ahead();  // the fake reports before returning
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("fake: cannot connect"), std::string::npos) << err;
  EXPECT_FALSE(remote.tier->get(fake_key(1)));  // skipped
  EXPECT_EQ(remote.state->gets, 0);
  remote.tier->connect_ahead();  // the breaker is open: not even tried
  EXPECT_EQ(remote.state->connects, 1);
}

TEST(RemoteTier, ClosingWhileAConnectionOpenedAheadIsFailingIsSafe) {
  // The failure arrives while the tier is being destroyed: the breaker it trips must still be
  // there (it is destroyed after the backend, which waits for its connecting thread).
  FakeRemote remote(options("fake://slow"));
  remote.state->connect_failure = fail(Errc::io, "fake: cannot connect");
  remote.state->connect_takes = std::chrono::milliseconds(100);
  ::testing::internal::CaptureStderr();
  remote.tier->connect_ahead();
  remote.tier.reset();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("fake://slow failed (fake: cannot connect)"), std::string::npos) << err;
}

// A second kind of remote, as a backend author would add one.
std::shared_ptr<FakeBackend::State>& fake_state() {
  static std::shared_ptr<FakeBackend::State> state;
  return state;
}

std::unique_ptr<RemoteTier> open_fake(const Config& config, RemoteOptions options) {
  if (config.remote_url == "fake://broken") return nullptr;
  fake_state() = std::make_shared<FakeBackend::State>();
  return std::make_unique<RemoteTier>(std::make_unique<FakeBackend>(fake_state()), options,
                                      std::make_shared<AtomicStats>());
}

TEST(RemoteFactory, TheSchemePicksTheBackendAndTheConfigReachesTheWrappers) {
  const RemoteScheme schemes[] = {remote_schemes()[0], {"fake://", open_fake}};
  Config config;
  config.remote_url = "fake://user:hunter2@store";
  config.remote_max_entry = 8;
  config.remote_secret = "alpha";
  auto tier = open_remote_tier(config, schemes);
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->location(), "fake://***@store");
  ASSERT_TRUE(tier->put(fake_key(1), "entry"));
  EXPECT_EQ(fake_state()->values.at(fake_key(1).hex()).substr(0, 8), "CBYSIG01");
  EXPECT_FALSE(tier->put(fake_key(2), "123456789"));
  EXPECT_EQ(tier->counters().remote_writes_dropped, 1u);
  config.remote_url = "fake://broken";
  EXPECT_EQ(open_remote_tier(config, schemes), nullptr);
}

TEST(RemoteFactory, RedisAndHttpAreTheSchemesCubbyKnowsAndAnUnknownOneIsAWarning) {
  std::vector<std::string_view> prefixes;
  for (const RemoteScheme& scheme : remote_schemes()) prefixes.push_back(scheme.prefix);
  std::vector<std::string_view> expected(std::begin(kRedisSchemes), std::end(kRedisSchemes));
  expected.insert(expected.end(), {"http://", "https://"});
  for (std::string_view prefix : expected) {
    EXPECT_NE(std::find(prefixes.begin(), prefixes.end(), prefix), prefixes.end()) << prefix;
  }
  EXPECT_EQ(remote_schemes()[0].prefix, "redis://");
  Config config;
  EXPECT_EQ(open_remote_tier(config), nullptr);  // no URL, no remote, no warning
  for (const auto& [url, location] :
       {std::pair{"redis://reader:hunter2@127.0.0.1:6379/2", "redis://***@127.0.0.1:6379/2"},
        std::pair{"rediss://reader:hunter2@127.0.0.1:6379", "rediss://***@127.0.0.1:6379"},
        std::pair{"unix://reader:hunter2@/run/r.sock", "unix://***@/run/r.sock"},
        std::pair{"redis+unix:///run/r.sock?db=1", "redis+unix:///run/r.sock?db=1"}}) {
    config.remote_url = url;
    auto tier = open_remote_tier(config);
    ASSERT_NE(tier, nullptr) << url;
    EXPECT_EQ(tier->location(), location);
  }
  for (const char* url : {"memcached://user:hunter2@host"}) {
    config.remote_url = url;
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(open_remote_tier(config), nullptr);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("names no known remote (known: redis://"), std::string::npos) << err;
    EXPECT_NE(err.find("https://...)"), std::string::npos) << err;
    EXPECT_NE(err.find("running without a remote"), std::string::npos) << err;
    EXPECT_EQ(err.find("hunter2"), std::string::npos) << err;
  }
  EXPECT_EQ(redact_remote_url("no scheme at all"), "(a CUBBY_REMOTE URL without a scheme://)");
}

}  // namespace
}  // namespace cubby
