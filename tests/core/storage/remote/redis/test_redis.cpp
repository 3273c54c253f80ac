// The Redis tier against a real redis-server (core/src/storage/remote/redis/redis.cpp): round
// trips, signing, read mode, size limit, TTL, background writes, and failing safe (refused, killed,
// paused: counted failures, then skipped for the back-off), whole-call deadlines against a fake
// server that drips its replies, TTL limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "drip_server.hpp"
#include "hanging_resolver.hpp"
#include "redis_server.hpp"
#include "remote_key.hpp"
#include "storage/remote/compress.hpp"
#include "storage/remote/redis/redis.hpp"
#include "storage/remote/sign.hpp"

namespace cubby {
namespace {

using testing::DripServer;
using testing::HangingResolver;
using testing::RedisServer;

Key key_of(std::uint8_t fill) { return testing::process_key(fill); }

class RedisTierTest : public ::testing::Test {
 protected:
  // The suite's one server (the binary runs PER_SUITE), handed over empty.
  void SetUp() override {
    std::string why;
    server_ = testing::shared_redis(&why);
    if (!server_) GTEST_SKIP() << why;
  }

  RedisOptions options(const std::string& secret = {}) const {
    RedisOptions o;
    o.url = parse_redis_url(server_->url()).value_or_throw();
    o.location = server_->url();
    o.secret = secret;
    o.timeout = std::chrono::milliseconds(300);
    o.backoff = std::chrono::seconds(60);
    return o;
  }

  std::optional<std::string> raw_get(const Key& key) const {
    auto reply = server_->command({"GET", RedisBackend::redis_key(key)});
    return reply ? reply->value : std::nullopt;
  }

  RedisServer* server_ = nullptr;
};

TEST_F(RedisTierTest, PutGetRemoveRoundTrip) {
  const auto tier_tier = open_redis_remote(options());
  RemoteTier& tier = *tier_tier;
  const std::string bytes("entry\0bytes", 11);
  auto missing = tier.get(key_of(1));
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_FALSE(missing->has_value());
  ASSERT_TRUE(tier.put(key_of(1), bytes));
  EXPECT_EQ(raw_get(key_of(1)), bytes);  // unsigned without a secret: the entry itself
  auto found = tier.get(key_of(1));
  ASSERT_TRUE(found && found->has_value());
  EXPECT_EQ(**found, bytes);
  ASSERT_TRUE(tier.remove(key_of(1)));
  EXPECT_EQ(raw_get(key_of(1)), std::nullopt);
  testing::expect_one_clean_round_trip(tier.counters(), bytes.size());
}

TEST_F(RedisTierTest, SignedWritesAndRejectedReads) {
  const auto alpha_tier = open_redis_remote(options("alpha"));
  RemoteTier& alpha = *alpha_tier;
  const auto beta_tier = open_redis_remote(options("beta"));
  RemoteTier& beta = *beta_tier;
  const auto plain_tier = open_redis_remote(options());
  RemoteTier& plain = *plain_tier;
  ASSERT_TRUE(alpha.put(key_of(2), "payload"));
  const auto stored = raw_get(key_of(2));
  ASSERT_TRUE(stored);
  EXPECT_TRUE(is_signed(*stored));
  auto same = alpha.get(key_of(2));
  ASSERT_TRUE(same && same->has_value());
  EXPECT_EQ(**same, "payload");
  EXPECT_FALSE(beta.get(key_of(2)));  // another secret: rejected
  EXPECT_EQ(beta.counters().remote_rejected, 1u);

  ASSERT_TRUE(plain.put(key_of(3), "unsigned"));
  EXPECT_FALSE(alpha.get(key_of(3)));  // unsigned, with a secret: rejected
  EXPECT_EQ(alpha.counters().remote_rejected, 1u);
  // Rejections are not failures of the remote: no back-off, the next lookup is made.
  auto again = alpha.get(key_of(2));
  ASSERT_TRUE(again && again->has_value());
  EXPECT_EQ(alpha.counters().remote_skipped, 0u);
}

TEST_F(RedisTierTest, ReadModeWritesNothing) {
  RedisOptions o = options();
  o.read_only = true;
  const auto tier_tier = open_redis_remote(o);
  RemoteTier& tier = *tier_tier;
  EXPECT_FALSE(tier.put(key_of(4), "x"));
  tier.put_later(key_of(4), "x");
  tier.drain(std::chrono::seconds(2));
  EXPECT_FALSE(tier.remove(key_of(4)));
  EXPECT_EQ(raw_get(key_of(4)), std::nullopt);
  EXPECT_EQ(server_->command({"DBSIZE"})->value, "0");
  EXPECT_EQ(tier.counters().remote_writes, 0u);
}

TEST_F(RedisTierTest, SizeLimitAndTtl) {
  RedisOptions o = options();
  o.max_entry = 8;
  o.ttl_s = 3600;
  const auto tier_tier = open_redis_remote(o);
  RemoteTier& tier = *tier_tier;
  EXPECT_FALSE(tier.put(key_of(5), "123456789"));  // 9 bytes > 8: not sent
  EXPECT_EQ(raw_get(key_of(5)), std::nullopt);
  EXPECT_EQ(tier.counters().remote_writes_dropped, 1u);
  ASSERT_TRUE(tier.put(key_of(6), "12345678"));
  const auto ttl = server_->command({"TTL", RedisBackend::redis_key(key_of(6))});
  ASSERT_TRUE(ttl && ttl->value);
  EXPECT_GT(std::stoll(*ttl->value), 0);
  EXPECT_LE(std::stoll(*ttl->value), 3600);
  // A value over the limit written by someone else is rejected, not read.
  ASSERT_TRUE(server_->command({"SET", RedisBackend::redis_key(key_of(7)), std::string(100, 'x')}));
  EXPECT_FALSE(tier.get(key_of(7)));
  EXPECT_EQ(tier.counters().remote_rejected, 1u);
}

TEST_F(RedisTierTest, TtlOverWhatRedisAcceptsIsClampedWithAWarning) {
  // Redis refuses an expiry whose milliseconds from now overflow: every write would fail.
  const std::uint64_t huge = 999999999999ull * 86400;  // CUBBY_REMOTE_TTL=999999999999d
  const std::string name = RedisBackend::redis_key(key_of(60));
  const auto refused = server_->command({"SET", name, "v", "EX", std::to_string(huge)});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->type, '-');
  const auto accepted = server_->command({"SET", name, "v", "EX", std::to_string(kMaxRemoteTtlS)});
  ASSERT_TRUE(accepted);
  EXPECT_EQ(accepted->value, "OK");

  Config config;
  config.remote_url = server_->url();
  config.remote_ttl_s = huge;  // a Config made in code: from_env refuses it
  ::testing::internal::CaptureStderr();
  auto tier = open_remote_tier(config);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(tier, nullptr);
  EXPECT_NE(err.find("never expire"), std::string::npos) << err;
  auto put = tier->put(key_of(61), "x");
  ASSERT_TRUE(put) << put.error().message;
  const auto ttl = server_->command({"TTL", RedisBackend::redis_key(key_of(61))});
  ASSERT_TRUE(ttl && ttl->value);
  EXPECT_GT(std::stoll(*ttl->value), 0);
}

TEST_F(RedisTierTest, LargeValuesEmptyValuesAndOddRepliesKeepTheConnectionInStep) {
  const auto tier_tier = open_redis_remote(options());
  RemoteTier& tier = *tier_tier;
  // Bigger than any socket read: the value arrives in many reads, straight into its string.
  // Random bytes do not compress: stored as they are, so the socket carries all 5 MiB.
  std::string big(5 << 20, '\0');
  std::mt19937 random(7);
  for (char& c : big) c = static_cast<char>(random() >> 24);
  ASSERT_TRUE(tier.put(key_of(30), big));
  auto found = tier.get(key_of(30));
  ASSERT_TRUE(found && found->has_value()) << (found ? "" : found.error().message);
  EXPECT_TRUE(**found == big);
  ASSERT_TRUE(tier.put(key_of(31), ""));
  auto empty = tier.get(key_of(31));
  ASSERT_TRUE(empty && empty->has_value());
  EXPECT_EQ(**empty, "");
  // A key of another type is an error reply: a counted error, not a value.
  ASSERT_TRUE(server_->command({"DEL", RedisBackend::redis_key(key_of(32))}));
  ASSERT_TRUE(server_->command({"RPUSH", RedisBackend::redis_key(key_of(32)), "a", "b"}));
  auto wrong = tier.get(key_of(32));
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("WRONGTYPE"), std::string::npos) << wrong.error().message;
  EXPECT_EQ(tier.counters().remote_errors, 1u);
  // Every later call on the pooled connection(s) still gets its own reply.
  for (int round = 0; round < 3; ++round) {
    auto again = tier.get(key_of(30));
    ASSERT_TRUE(again && again->has_value());
    EXPECT_EQ((*again)->size(), big.size());
    auto missing = tier.get(key_of(33));
    ASSERT_TRUE(missing);
    EXPECT_FALSE(missing->has_value());
  }
  EXPECT_EQ(tier.counters().remote_errors, 1u);
  EXPECT_EQ(tier.counters().remote_bytes_read, 4 * big.size());
}

// An entry-like value that compresses well (CUBINs shrink ~8x).
std::string compressible(std::size_t size) {
  std::string out;
  for (std::size_t i = 0; out.size() < size; ++i) {
    out += "CUBBYENT section .text._Z5scaleIfEvPT_ " + std::to_string(i % 97) + '\0';
  }
  out.resize(size);
  return out;
}

TEST(CompressValue, RoundTripsAndLeavesIncompressibleBytesAsTheyAre) {
  const std::string entry = compressible(100000);
  const std::string value = compress_value(entry);
  EXPECT_TRUE(is_compressed(value));
  EXPECT_LT(value.size(), entry.size() / 4);
  auto back = decompress_value(value, entry.size());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, entry);
  for (const std::string& raw : {std::string(), std::string("CUBBYENT"), std::string("x")}) {
    EXPECT_EQ(compress_value(raw), raw);  // no gain: stored as it is
  }
  // Bytes that would read as compressed are compressed even without a gain (found by
  // fuzz_remote_value): every value reads back as what was written.
  const std::string lookalike = std::string(kCompressedMagic) + "01";
  const std::string sealed = compress_value(lookalike);
  EXPECT_NE(sealed, lookalike);
  auto read_back = decompress_value(sealed, lookalike.size());
  ASSERT_TRUE(read_back) << read_back.error().message;
  EXPECT_EQ(*read_back, lookalike);
}

TEST(CompressValue, BadValuesAreRejectedBeforeAnyBigAllocation) {
  const std::string entry = compressible(100000);
  const std::string value = compress_value(entry);
  EXPECT_FALSE(decompress_value(value, entry.size() - 1));            // over the limit
  EXPECT_FALSE(decompress_value(value.substr(0, 12), entry.size()));  // short header
  EXPECT_FALSE(decompress_value(value.substr(0, value.size() - 5), entry.size()));  // cut
  std::string lying = value;
  lying[8] = static_cast<char>(lying[8] + 1);  // states one byte more than the block holds
  EXPECT_FALSE(decompress_value(lying, entry.size() + 1));
  std::string huge = value;
  for (int i = 8; i < 16; ++i) huge[i] = '\xff';  // 2^64 - 1 bytes
  auto rejected = decompress_value(huge, std::uint64_t(1) << 40);
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().code, Errc::corrupt);
}

TEST_F(RedisTierTest, ValuesTravelCompressedAndBothFormsAreRead) {
  const std::string entry = compressible(200000);
  const auto tier_tier = open_redis_remote(options());
  RemoteTier& tier = *tier_tier;
  ASSERT_TRUE(tier.put(key_of(40), entry));
  const auto stored = raw_get(key_of(40));
  ASSERT_TRUE(stored);
  EXPECT_TRUE(is_compressed(*stored));
  EXPECT_EQ(tier.counters().remote_bytes_written, stored->size());  // what crossed the network
  auto found = tier.get(key_of(40));
  ASSERT_TRUE(found && found->has_value());
  EXPECT_TRUE(**found == entry);
  EXPECT_EQ(tier.counters().remote_bytes_read, stored->size());
  // A writer with compression off stores the entry itself; readers take either form.
  RedisOptions plain_options = options();
  plain_options.compress = false;
  const auto plain_tier = open_redis_remote(plain_options);
  RemoteTier& plain = *plain_tier;
  ASSERT_TRUE(plain.put(key_of(41), entry));
  EXPECT_EQ(raw_get(key_of(41)), entry);
  auto uncompressed = tier.get(key_of(41));
  ASSERT_TRUE(uncompressed && uncompressed->has_value());
  EXPECT_TRUE(**uncompressed == entry);
  auto compressed = plain.get(key_of(40));
  ASSERT_TRUE(compressed && compressed->has_value());
  EXPECT_TRUE(**compressed == entry);
  // Signed: the envelope wraps the compressed value.
  const auto signing_tier = open_redis_remote(options("alpha"));
  RemoteTier& signing = *signing_tier;
  ASSERT_TRUE(signing.put(key_of(42), entry));
  const auto sealed = raw_get(key_of(42));
  ASSERT_TRUE(sealed);
  EXPECT_TRUE(is_signed(*sealed));
  EXPECT_TRUE(is_compressed(sealed->substr(kSignatureMagic.size() + kSignatureBytes)));
  auto opened = signing.get(key_of(42));
  ASSERT_TRUE(opened && opened->has_value());
  EXPECT_TRUE(**opened == entry);
}

TEST_F(RedisTierTest, CorruptCompressedValuesAreRejectedAndTheNextCallWorks) {
  const std::string entry = compressible(50000);
  const auto tier_tier = open_redis_remote(options());
  RemoteTier& tier = *tier_tier;
  const std::string value = compress_value(entry);
  int round = 0;
  for (const std::string& bad :
       {value.substr(0, value.size() / 2), value.substr(0, 10), value + "trailing"}) {
    SCOPED_TRACE(round++);
    ASSERT_TRUE(server_->command({"SET", RedisBackend::redis_key(key_of(43)), bad}));
    EXPECT_FALSE(tier.get(key_of(43)));
  }
  EXPECT_EQ(tier.counters().remote_rejected, 3u);
  EXPECT_EQ(tier.counters().remote_errors + tier.counters().remote_skipped,
            0u);  // not a failure of Redis
  ASSERT_TRUE(tier.put(key_of(43), entry));
  auto good = tier.get(key_of(43));
  ASSERT_TRUE(good && good->has_value());
  EXPECT_TRUE(**good == entry);
}

TEST_F(RedisTierTest, OversizedValueIsRejectedUnreadAndTheNextCallWorks) {
  RedisOptions o = options();
  o.max_entry = 1 << 10;
  const auto tier_tier = open_redis_remote(o);
  RemoteTier& tier = *tier_tier;
  ASSERT_TRUE(
      server_->command({"SET", RedisBackend::redis_key(key_of(34)), std::string(1 << 20, 'y')}));
  ASSERT_TRUE(tier.put(key_of(35), "small"));
  EXPECT_FALSE(tier.get(key_of(34)));  // rejected from its length: its bytes are never read
  EXPECT_EQ(tier.counters().remote_rejected, 1u);
  auto small = tier.get(key_of(35));  // not answered with the rejected value's leftovers
  ASSERT_TRUE(small && small->has_value());
  EXPECT_EQ(**small, "small");
}

TEST_F(RedisTierTest, BackgroundWritesAreDrained) {
  const auto tier_tier = open_redis_remote(options());
  RemoteTier& tier = *tier_tier;
  for (std::uint8_t i = 10; i < 20; ++i) tier.put_later(key_of(i), "bytes " + std::to_string(i));
  tier.drain(std::chrono::seconds(10));
  for (std::uint8_t i = 10; i < 20; ++i)
    EXPECT_EQ(raw_get(key_of(i)), "bytes " + std::to_string(i));
  EXPECT_EQ(tier.counters().remote_writes, 10u);
}

// A server that closes idle clients (`timeout 1`) closes the pooled connection between writes:
// the next SET finds it closed and is sent again, once, on a new connection (SET of a
// content-addressed value is safe to apply twice), and so is a GET. Nothing is lost or counted.
TEST_F(RedisTierTest, AfterTheServersIdleTimeoutWritesAndReadsAreSentAgainOnANewConnection) {
  ASSERT_TRUE(server_->command({"CONFIG", "SET", "timeout", "1"}));
  const auto tier_tier = open_redis_remote(options());
  RemoteTier& tier = *tier_tier;
  const auto idle_closed = [&] {  // the server has closed every client but the one asking
    for (int i = 0; i < 1000; ++i) {
      const auto info = server_->command({"INFO", "clients"});
      if (info && info->value && info->value->find("connected_clients:1\r\n") != std::string::npos)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  ASSERT_TRUE(tier.put(key_of(40), "first"));
  ASSERT_TRUE(idle_closed());
  tier.put_later(key_of(41), "written behind");
  tier.drain(std::chrono::seconds(10));
  EXPECT_EQ(raw_get(key_of(41)), "written behind");
  ASSERT_TRUE(idle_closed());
  auto got = tier.get(key_of(40));
  ASSERT_TRUE(got && got->has_value()) << (got ? "miss" : got.error().message);
  EXPECT_EQ(**got, "first");
  const Stats counted = tier.counters();
  EXPECT_EQ(counted.remote_writes, 2u);
  EXPECT_EQ(counted.remote_writes_dropped, 0u);
  EXPECT_EQ(counted.remote_errors, 0u);
  EXPECT_EQ(counted.remote_skipped, 0u);
}

TEST_F(RedisTierTest, KilledServerIsAnErrorThenSkipped) {
  const auto tier_tier = open_redis_remote(options());
  RemoteTier& tier = *tier_tier;
  ASSERT_TRUE(tier.put(key_of(8), "x"));  // a pooled connection now exists
  server_->stop();
  auto failed = tier.get(key_of(8));
  EXPECT_FALSE(failed);
  EXPECT_EQ(tier.counters().remote_errors, 1u);
  EXPECT_FALSE(tier.get(key_of(8)));  // within the back-off: not even tried
  EXPECT_EQ(tier.counters().remote_skipped, 1u);
  EXPECT_EQ(tier.counters().remote_errors, 1u);
}

TEST_F(RedisTierTest, PausedServerTimesOutThenIsSkipped) {
  const auto tier_tier = open_redis_remote(options());
  RemoteTier& tier = *tier_tier;
  ASSERT_TRUE(tier.put(key_of(9), "x"));
  server_->pause();
  EXPECT_FALSE(tier.get(key_of(9)));  // returns after the 300 ms timeout
  EXPECT_EQ(tier.counters().remote_timeouts, 1u);
  EXPECT_FALSE(tier.get(key_of(9)));
  EXPECT_EQ(tier.counters().remote_skipped, 1u);
  server_->resume();
}

TEST_F(RedisTierTest, BreakerClosesAfterTheBackoff) {
  RedisOptions o = options();
  o.backoff = std::chrono::milliseconds(1);
  const auto tier_tier = open_redis_remote(o);
  RemoteTier& tier = *tier_tier;
  ASSERT_TRUE(tier.put(key_of(10), "x"));
  server_->pause();
  EXPECT_FALSE(tier.get(key_of(10)));
  server_->resume();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto recovered = tier.get(key_of(10));  // a fresh connection after the back-off
  ASSERT_TRUE(recovered) << recovered.error().message;
  EXPECT_EQ(recovered->value_or(""), "x");
}

TEST_F(RedisTierTest, ConnectAheadOpensOneConnectionThatLookupsWaitForAndUse) {
  const std::uint64_t before = server_->connections_received();
  {
    const auto tier_tier = open_redis_remote(options());
    RemoteTier& tier = *tier_tier;
    tier.connect_ahead();
    tier.connect_ahead();  // once per tier
    // Lookups made at once wait for that connection instead of opening their own.
    for (int i = 0; i < 3; ++i) {
      auto missing = tier.get(key_of(11));
      ASSERT_TRUE(missing) << missing.error().message;
      EXPECT_FALSE(missing->has_value());
    }
  }
  // Minus the connection of the question itself: the tier opened exactly one.
  EXPECT_EQ(server_->connections_received() - before - 1, 1u);

  // Without any lookup, the connection is opened all the same.
  const std::uint64_t idle_before = server_->connections_received();
  const auto idle_tier = open_redis_remote(options());
  RemoteTier& idle = *idle_tier;
  idle.connect_ahead();
  EXPECT_EQ(server_->await_connections_since(idle_before), 1u);
  EXPECT_EQ(idle.counters().remote_errors + idle.counters().remote_timeouts, 0u);
}

// A port nobody listens on: connect is refused at once (no server needed).
RedisOptions refused_options() {
  RedisOptions o;
  o.url.host = "127.0.0.1";
  o.url.port = 1;
  o.location = "redis://127.0.0.1:1";
  return o;
}

TEST(RedisTierRefused, ConnectAheadFailureCountsOnceAndTheLookupIsSkipped) {
  const auto tier_tier = open_redis_remote(refused_options());
  RemoteTier& tier = *tier_tier;
  tier.connect_ahead();
  EXPECT_FALSE(tier.get(key_of(1)));  // waits for the failed connect, then the breaker is open
  const Stats counters = tier.counters();
  EXPECT_EQ(counters.remote_errors + counters.remote_timeouts, 1u);
  EXPECT_EQ(counters.remote_skipped, 1u);
}

TEST(RedisTierRefused, NothingListeningIsAnErrorThenSkipped) {
  const auto tier_tier = open_redis_remote(refused_options());
  RemoteTier& tier = *tier_tier;
  EXPECT_FALSE(tier.get(key_of(1)));
  EXPECT_FALSE(tier.get(key_of(1)));
  const Stats counters = tier.counters();
  EXPECT_EQ(counters.remote_errors + counters.remote_timeouts, 1u);
  EXPECT_EQ(counters.remote_skipped, 1u);
}

// A server that drips a reply: a byte every 20 ms, so that no single read ever waits as long as
// the 250 ms timeout. Every call must still end by its deadline.
constexpr auto kDripTimeout = std::chrono::milliseconds(250);
constexpr auto kDripInterval = std::chrono::milliseconds(20);

RedisOptions drip_options(const DripServer& server, const std::string& password = {}) {
  RedisOptions o;
  o.url.host = "127.0.0.1";
  o.url.port = server.port();
  o.url.password = password;
  o.location = server.url();
  o.timeout = kDripTimeout;
  o.backoff = std::chrono::seconds(60);
  return o;
}

TEST(RedisTierDrip, GetWithADrippedValueFailsByTheDeadline) {
  // A 1 MB value announced, then its bytes one at a time.
  DripServer server({{"GET", {"$1000000\r\n", "x"}}}, kDripInterval);
  const auto tier_tier = open_redis_remote(drip_options(server));
  RemoteTier& tier = *tier_tier;
  Result<std::optional<std::string>> got = std::optional<std::string>();
  const auto took = testing::duration_of(server, [&] { got = tier.get(key_of(50)); });
  EXPECT_FALSE(got);
  EXPECT_LT(took, 5 * kDripTimeout);  // a bound derived from the timeout, not a speed target
  EXPECT_EQ(tier.counters().remote_timeouts, 1u);
  EXPECT_FALSE(tier.get(key_of(50)));  // the breaker is open: not asked again
  EXPECT_EQ(tier.counters().remote_skipped, 1u);
}

TEST(RedisTierDrip, GetWithADrippedLengthLineFailsByTheDeadline) {
  DripServer server({{"GET", {"$", "1"}}}, kDripInterval);  // "$1111111..." never ends its line
  const auto tier_tier = open_redis_remote(drip_options(server));
  RemoteTier& tier = *tier_tier;
  Result<std::optional<std::string>> got = std::optional<std::string>();
  const auto took = testing::duration_of(server, [&] { got = tier.get(key_of(51)); });
  EXPECT_FALSE(got);
  EXPECT_LT(took, 5 * kDripTimeout);
  EXPECT_EQ(tier.counters().remote_timeouts, 1u);
}

TEST(RedisTierDrip, AnOversizedValueWhoseLengthLineIsDrippedIsStillRejectedUnread) {
  // "$" at once, then "2000000\r\n" a byte at a time: hiredis's reader takes the "$" before the
  // length arrives, so the length is checked on the whole first line before the reader parses it.
  DripServer server({{"GET", {"$", "2000000\r\n"}}}, std::chrono::milliseconds(5));
  RedisOptions o = drip_options(server);
  o.timeout = std::chrono::seconds(5);
  o.max_entry = 1 << 10;
  const auto tier_tier = open_redis_remote(o);
  RemoteTier& tier = *tier_tier;
  Result<std::optional<std::string>> got = std::optional<std::string>();
  const auto took = testing::duration_of(server, [&] { got = tier.get(key_of(55)); });
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, Errc::corrupt);
  EXPECT_NE(got.error().message.find("CUBBY_REMOTE_MAX_ENTRY"), std::string::npos);
  EXPECT_LT(took, o.timeout);  // rejected once the line is whole, not timed out
  EXPECT_EQ(tier.counters().remote_rejected, 1u);
  EXPECT_EQ(tier.counters().remote_timeouts, 0u);
}

TEST(RedisTierDrip, SetWithADrippedReplyFailsByTheDeadline) {
  DripServer server({{"SET", {"+", "O"}}}, kDripInterval);  // "+OOOO..." never ends its line
  const auto tier_tier = open_redis_remote(drip_options(server));
  RemoteTier& tier = *tier_tier;
  Result<void> put;
  const auto took = testing::duration_of(server, [&] { put = tier.put(key_of(52), "bytes"); });
  EXPECT_FALSE(put);
  EXPECT_LT(took, 5 * kDripTimeout);
  EXPECT_EQ(tier.counters().remote_timeouts, 1u);
  EXPECT_EQ(tier.counters().remote_writes_dropped, 1u);
  EXPECT_NE(put.error().message.find("CUBBY_REMOTE_TIMEOUT_MS"), std::string::npos)
      << put.error().message;
}

TEST(RedisTierDrip, DrippedAuthReplyFailsTheLookupByTheDeadline) {
  // The connect's handshake is part of the lookup's deadline.
  DripServer server({{"AUTH", {"+", "O"}}, {"GET", {"$-1\r\n", ""}}}, kDripInterval);
  const auto tier_tier = open_redis_remote(drip_options(server, "secret"));
  RemoteTier& tier = *tier_tier;
  Result<std::optional<std::string>> got = std::optional<std::string>();
  const auto took = testing::duration_of(server, [&] { got = tier.get(key_of(53)); });
  EXPECT_FALSE(got);
  EXPECT_LT(took, 5 * kDripTimeout);
  EXPECT_EQ(tier.counters().remote_timeouts, 1u);
  EXPECT_EQ(server.received("GET"), 0);
}

TEST(RedisTierDrip, DestructorEndsADrippedBackgroundWriteWithinItsBound) {
  DripServer server({{"SET", {"+", "O"}}}, kDripInterval);
  const auto bound = std::max<std::chrono::milliseconds>(std::chrono::seconds(1), 4 * kDripTimeout);
  auto tier = open_redis_remote(drip_options(server));
  tier->put_later(key_of(54), "bytes");
  ASSERT_TRUE(server.await("SET", std::chrono::seconds(10)));  // the write is being dripped
  const auto took = testing::duration_of(server, [&] { tier.reset(); });
  EXPECT_LT(took, bound);
}

TEST(RedisTierUnix, UnixSocketUrlsRoundTripWithAclUsers) {
  std::string why;
  auto server =
      RedisServer::start(&why, {"--unixsocket", "{dir}/redis.sock", "--unixsocketperm", "700"});
  if (!server) GTEST_SKIP() << why;
  ASSERT_EQ(server->command({"ACL", "SETUSER", "ci", "on", ">s3cr%t", "~cubby:*", "+@all"})->value,
            "OK");
  const std::string socket = (server->dir() / "redis.sock").string();
  for (const std::string& url :
       {"unix://" + socket, "redis+unix://" + socket, "unix://ci:s3cr%25t@" + socket + "?db=0"}) {
    SCOPED_TRACE(url);
    RedisOptions o;
    o.url = parse_redis_url(url).value_or_throw();
    o.location = redact_remote_url(url);
    const auto tier = open_redis_remote(o);
    auto put = tier->put(key_of(70), "over a socket");
    ASSERT_TRUE(put) << put.error().message;
    auto got = tier->get(key_of(70));
    ASSERT_TRUE(got && got->has_value()) << (got ? "missing" : got.error().message);
    EXPECT_EQ(**got, "over a socket");
  }
}

class RedisAclTest : public RedisTierTest {
 protected:
  void SetUp() override {
    RedisTierTest::SetUp();
    if (IsSkipped()) return;
    // A writer and a reader of cubby's keys only, as a managed Redis's ACL would set them.
    ASSERT_EQ(
        server_->command({"ACL", "SETUSER", "writer", "on", ">w-pass", "~cubby:*", "+@all"})->value,
        "OK");
    ASSERT_EQ(server_
                  ->command({"ACL", "SETUSER", "reader", "on", ">r-pass", "~cubby:*", "+get",
                             "+auth", "+ping"})
                  ->value,
              "OK");
  }
  RedisOptions user_options(const std::string& user, const std::string& password) const {
    RedisOptions o = options();
    const std::string url =
        "redis://" + user + ":" + password + "@127.0.0.1:" + std::to_string(server_->port());
    o.url = parse_redis_url(url).value_or_throw();
    o.location = redact_remote_url(url);
    return o;
  }
};

TEST_F(RedisAclTest, AnAclUserAuthenticatesAndAReaderOnlyReads) {
  const auto writer = open_redis_remote(user_options("writer", "w-pass"));
  ASSERT_TRUE(writer->put(key_of(71), "acl"));
  const auto reader = open_redis_remote(user_options("reader", "r-pass"));
  auto got = reader->get(key_of(71));
  ASSERT_TRUE(got && got->has_value()) << (got ? "missing" : got.error().message);
  EXPECT_EQ(**got, "acl");
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(reader->put(key_of(72), "x"));  // NOPERM: this process only reads from now on
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("NOPERM"), std::string::npos) << err;
  EXPECT_EQ(err.find("r-pass"), std::string::npos) << err;
  EXPECT_TRUE(reader->get(key_of(71)));
}

TEST_F(RedisAclTest, AWrongPasswordIsAMissSaidOnceWithoutThePassword) {
  const auto tier = open_redis_remote(user_options("writer", "not-the-pass"));
  ::testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(tier->get(key_of(73)));
  EXPECT_FALSE(tier->get(key_of(73)));
  EXPECT_FALSE(tier->put(key_of(73), "x"));
  const auto took = std::chrono::steady_clock::now() - start;
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_LT(took, std::chrono::milliseconds(300));  // the timeout of options()
  EXPECT_NE(err.find("WRONGPASS"), std::string::npos) << err;
  EXPECT_EQ(err.find("not-the-pass"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(tier->counters().remote_errors, 1u);
  EXPECT_EQ(tier->counters().remote_skipped, 2u);
  EXPECT_EQ(raw_get(key_of(73)), std::nullopt);
}

// Replies no command of the backend ever gets: refused from their first line, before anything
// is allocated for them or read after it (no timeout: the call ends at once).
TEST(RedisTierHostileReplies, ArraysAndOversizedStatusRepliesAreRefusedUnread) {
  const std::pair<const char*, std::string> cases[] = {
      {"GET", "*200000000\r\n"},                 // 200 million elements declared
      {"GET", "*1\r\n$4000000000\r\n"},          // a 4 GB bulk string inside an array
      {"GET", "*1\r\n*1\r\n*1\r\n$1\r\nx\r\n"},  // nested arrays
      {"SET", "*1\r\n$4000000000\r\n"},
      {"SET", "$4000000000\r\n"},  // a status reply's bulk length is bounded too
      {"AUTH", "*2\r\n+OK\r\n+OK\r\n"},
      {"SELECT", "*0\r\n"},
  };
  for (const auto& [name, reply] : cases) {
    SCOPED_TRACE(std::string(name) + " answered " + reply);
    // After the reply, a stream of valid RESP that never ends: only refusing it unread ends the
    // call before the deadline.
    std::map<std::string, DripServer::Answer> answers{{"AUTH", {"+OK\r\n", ""}},
                                                      {"SELECT", {"+OK\r\n", ""}}};
    answers[name] = {reply, "+OK\r\n"};
    DripServer server(answers, std::chrono::milliseconds(1));
    RedisOptions o = drip_options(server, "secret");
    o.url.db = 2;
    o.timeout = std::chrono::seconds(5);
    const auto tier = open_redis_remote(o);
    const bool is_set = std::string(name) == "SET";
    bool failed = false;
    const auto took = testing::duration_of(server, [&] {
      failed = is_set ? !tier->put(key_of(56), "bytes") : !tier->get(key_of(56));
    });
    EXPECT_TRUE(failed);
    EXPECT_LT(took, o.timeout);  // refused, not timed out
    EXPECT_EQ(tier->counters().remote_timeouts, 0u);
    EXPECT_EQ(tier->counters().remote_rejected + tier->counters().remote_errors, 1u);
  }
}

// A bulk value is read straight into place from its length line; one that does not end with
// CRLF where its length says is not a Redis reply: an error, never a value (nor the start of the
// next reply).
TEST(RedisTierHostileReplies, ABulkValueNotEndedByCrlfIsAnErrorNotAValue) {
  DripServer server({{"GET", {"$5\r\nhelloXY", "$2\r\nOK\r\n"}}}, std::chrono::milliseconds(1));
  RedisOptions o = drip_options(server, "");
  o.timeout = std::chrono::seconds(5);
  const auto tier = open_redis_remote(o);
  Result<std::optional<std::string>> got = std::optional<std::string>();
  const auto took = testing::duration_of(server, [&] { got = tier->get(key_of(57)); });
  EXPECT_FALSE(got);
  EXPECT_LT(took, o.timeout);
  EXPECT_EQ(tier->counters().remote_errors, 1u);
  EXPECT_EQ(tier->counters().remote_rejected + tier->counters().remote_timeouts, 0u);
}

// Error replies that say the server cannot serve now (not a fact about the key): said once,
// counted, and the remote backed off, instead of two round trips for every lookup.
TEST(RedisTierErrorReplies, ServerErrorsAreWarnedOnceCountedAndBackedOff) {
  for (const std::string error :
       {"-ERR unknown command 'GET'", "-LOADING Redis is loading the dataset in memory",
        "-MASTERDOWN Link with MASTER is down", "-MOVED 1234 127.0.0.1:1", "-ASK 1234 :1",
        // a cluster answers it to multi-key commands during a migration, never to one key
        "-TRYAGAIN Multiple keys request during rehashing of slot"}) {
    SCOPED_TRACE(error);
    DripServer server({{"GET", {error + "\r\n", ""}}, {"SET", {error + "\r\n", ""}}},
                      std::chrono::milliseconds(1));
    RedisOptions o = drip_options(server);
    o.timeout = std::chrono::seconds(5);
    const auto tier = open_redis_remote(o);
    ::testing::internal::CaptureStderr();
    const auto took = testing::duration_of(server, [&] {
      EXPECT_FALSE(tier->get(key_of(57)));
      EXPECT_FALSE(tier->get(key_of(57)));  // backed off: not asked
      EXPECT_FALSE(tier->put(key_of(57), "bytes"));
    });
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_LT(took, o.timeout);
    EXPECT_EQ(server.received("GET"), 1);
    EXPECT_EQ(server.received("SET"), 0);
    EXPECT_EQ(tier->counters().remote_errors, 1u);
    EXPECT_EQ(tier->counters().remote_skipped, 2u);
    if (!error.starts_with("-MOVED") && !error.starts_with("-ASK")) {
      // Followed redirections fail on the node they name (nothing listens there).
      EXPECT_NE(err.find(error.substr(1, 8)), std::string::npos) << err;
    }
    const std::size_t lines = static_cast<std::size_t>(std::count(err.begin(), err.end(), '\n'));
    EXPECT_LE(lines, 2u) << err;  // said once (the breaker's warning and at most one more)
  }
}

TEST(RedisTierErrorReplies, APerKeyErrorDoesNotBackOff) {
  DripServer server(
      {{"GET", {"-WRONGTYPE Operation against a key holding the wrong kind\r\n", ""}}},
      std::chrono::milliseconds(1));
  const auto tier = open_redis_remote(drip_options(server));
  EXPECT_FALSE(tier->get(key_of(58)));
  EXPECT_FALSE(tier->get(key_of(58)));
  EXPECT_EQ(server.received("GET"), 2);
  EXPECT_EQ(tier->counters().remote_skipped, 0u);
}

// Name resolution is part of a call's deadline: a resolver that hangs (a DNS server that never
// answers) costs a lookup its timeout, and the store's exit nothing beyond its bound.
RedisOptions hanging_dns_options(HangingResolver& hanging) {
  RedisOptions o;
  o.url.host = "cache.example.invalid";
  o.location = "redis://cache.example.invalid:6379";
  o.timeout = std::chrono::milliseconds(200);
  o.resolver = hanging.resolver();
  return o;
}

TEST(RedisTierResolve, AHangingResolverCostsALookupItsTimeoutOnly) {
  HangingResolver hanging;
  const auto tier = open_redis_remote(hanging_dns_options(hanging));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(tier->get(key_of(59)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(tier->counters().remote_timeouts, 1u);
}

TEST(RedisTierResolve, ExitDoesNotWaitForAConnectAheadThatIsResolving) {
  HangingResolver hanging;
  auto tier = open_redis_remote(hanging_dns_options(hanging));
  tier->connect_ahead();
  const auto start = std::chrono::steady_clock::now();
  tier.reset();  // joins connect_ahead's thread: bounded by the timeout, not the resolver
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(RedisTierOpen, NoUrlNoTierAndBadUrlIsAWarningNotAnError) {
  Config config;
  EXPECT_EQ(open_remote_tier(config), nullptr);
  config.remote_url = "ftp://user:hunter2@host";  // a scheme cubby does not know
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(open_remote_tier(config), nullptr);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("CUBBY_REMOTE"), std::string::npos);
  EXPECT_EQ(err.find("hunter2"), std::string::npos) << err;
  config.remote_url = "redis://reader:hunter2@127.0.0.1:6379";
  auto tier = open_remote_tier(config);
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->location().find("hunter2"), std::string::npos);
  EXPECT_EQ(tier->location(), "redis://***@127.0.0.1:6379");
}

// The suite-shared server (redis_server.hpp) is handed to each test as a fresh one would be.
TEST(SharedRedis, EachTestGetsItEmptyAndAServerATestSpoiledIsReplaced) {
  std::string why;
  RedisServer* first = testing::shared_redis(&why);
  if (first == nullptr) GTEST_SKIP() << why;
  const int port = first->port();
  ASSERT_EQ(first->command({"SET", "left-behind", "v"})->value, "OK");
  first->pause();  // a test that failed while the server was paused
  RedisServer* second = testing::shared_redis(&why);
  ASSERT_NE(second, nullptr) << why;
  EXPECT_EQ(second->port(), port);  // the same server, not a new one
  EXPECT_EQ(second->command({"EXISTS", "left-behind"})->value, "0");
  EXPECT_EQ(second->command({"ACL", "SETUSER", "someone", "on", ">pw", "+@all"})->value, "OK");
  RedisServer* third = testing::shared_redis(&why);  // users added: a new server
  ASSERT_NE(third, nullptr) << why;
  EXPECT_EQ(third->command({"ACL", "USERS"})->value, "1");
  ASSERT_EQ(third->command({"CONFIG", "SET", "requirepass", "secret"})->value, "OK");
  RedisServer* fourth = testing::shared_redis(&why);  // a password set: a new server
  ASSERT_NE(fourth, nullptr) << why;
  EXPECT_EQ(fourth->command({"PING"})->value, "PONG");
  fourth->stop();
  RedisServer* fifth = testing::shared_redis(&why);  // stopped: a new server
  ASSERT_NE(fifth, nullptr) << why;
  EXPECT_TRUE(fifth->running());
  EXPECT_EQ(fifth->command({"PING"})->value, "PONG");
}

}  // namespace
}  // namespace cubby
