// The orchestrator with a remote tier, end to end with real NVRTC and a real redis-server:
// memory -> disk -> remote -> compile, backfill, failing safe, signing, read mode, racing machines.
// Each "machine" is a Cache on its own store folder.
#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <random>
#include <thread>

#include "cli_process.hpp"
#include "cubby/cache.hpp"
#include "cubby/entry.hpp"
#include "drip_server.hpp"
#include "format/blob.hpp"
#include "format/recipe.hpp"
#include "redis_server.hpp"
#include "stats/stats_report.hpp"
#include "storage/local/lock.hpp"
#include "storage/local/manifests.hpp"
#include "storage/local/store_stats.hpp"
#include "storage/remote/redis/redis.hpp"

namespace cubby {
namespace {

using testing::count_entries;
using testing::RedisServer;
using testing::TempDir;

// A program of its own per test (a salt in a comment), so keys never collide on a shared server.
CompileRequest request(const std::string& salt, int variant = 0, bool one_name = false) {
  CompileRequest r;
  r.source = "// " + salt +
             "\nnamespace ns {\ntemplate <class T, int N> __global__ void fill(T* out) "
             "{ out[threadIdx.x] = T(N + " +
             std::to_string(variant) + "); }\n}\n";
  r.program_name = "remote_test.cu";
  r.name_expressions = {"ns::fill<float, 3>", "ns::fill<int, 1 + 1>"};
  if (one_name) r.name_expressions.pop_back();
  r.arch = "sm_90";
  return r;
}

class RemoteCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    server_ = testing::shared_redis(&why);  // the suite's one server (the binary runs PER_SUITE)
    if (server_) {
      port_ = server_->port();
    } else if (const char* shared = std::getenv("CUBBY_TEST_REDIS_URL")) {
      // The server ci/test.sh started: for the tests that neither stop, pause nor reconfigure it.
      port_ = testing::port_of_local_url(shared);
    }
    if (port_ == 0) GTEST_SKIP() << why << "; and CUBBY_TEST_REDIS_URL names no local server";
    std::random_device random;
    salt_ = std::to_string(random()) + "-" + std::to_string(random());
  }

  // A machine: its own store folder, the test's Redis.
  Config machine(const std::string& name) {
    dirs_.push_back(std::make_unique<TempDir>("remote-" + name));
    Config config;
    config.dir = dirs_.back()->path();
    config.remote_url = "redis://127.0.0.1:" + std::to_string(port_);
    config.remote_timeout_ms = 300;
    return config;
  }

  bool remote_has(const Key& key) const {
    auto reply = command({"EXISTS", RedisBackend::redis_key(key)});
    return reply && reply->value == "1";
  }

  std::optional<testing::RespReply> command(const std::vector<std::string>& args) const {
    return testing::resp_command(port_, args);
  }

  // Until `cache` has read `count` entries ahead (a lookup of a key the read-ahead has not
  // reached fetches it itself: counts asserted without this wait would depend on timing).
  static bool read_ahead(Cache& cache, std::uint64_t count) {
    for (int i = 0; i < 5000 && cache.stats().remote_read_ahead < count; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return cache.stats().remote_read_ahead == count;
  }

  // The test stops, pauses or reconfigures the server: only a private one will do.
  bool private_server() const { return server_ != nullptr; }

  RedisServer* server_ = nullptr;
  int port_ = 0;
  std::string salt_;
  std::vector<std::unique_ptr<TempDir>> dirs_;
};

TEST_F(RemoteCacheTest, FreshStoreIsServedByRedisAndBackfillsDisk) {
  if (!private_server())
    GTEST_SKIP() << "needs a private redis-server (it is stopped, paused or counted)";
  CacheResult first;
  {
    Cache a(machine("a"));
    first = a.compile(request(salt_));
    EXPECT_EQ(first.tier, Source::compiled);
  }  // destruction drains the background write
  ASSERT_TRUE(remote_has(first.key));

  const Config b_config = machine("b");
  {
    Cache b(b_config);
    const CacheResult remote = b.compile(request(salt_));
    EXPECT_TRUE(remote.hit);
    EXPECT_EQ(remote.tier, Source::remote);
    EXPECT_EQ(remote.entry->lowered_names, first.entry->lowered_names);
    EXPECT_EQ(remote.entry->payload, first.entry->payload);
    const Stats stats = b.stats();
    EXPECT_EQ(stats.hits_remote, 1u);
    EXPECT_EQ(stats.remote_misses, 0u);
    EXPECT_EQ(stats.compiles, 0u);
    EXPECT_EQ(stats.remote_writes, 0u);  // a remote hit is not sent back
    // Network bytes: the entry travels LZ4-compressed, smaller than its CUBIN alone.
    EXPECT_GT(stats.remote_bytes_read, 0u);
    EXPECT_LT(stats.remote_bytes_read, first.entry->payload.size());
    EXPECT_GT(stats.bytes_read, first.entry->payload.size());  // the entry, decompressed
    EXPECT_GT(stats.remote_ms, 0.0);
    EXPECT_EQ(b.compile(request(salt_)).tier, Source::memory);
  }  // destruction waits for the background backfill
  DiskTier b_disk(b_config.dir);
  EXPECT_EQ(count_entries(b_disk), 1u);  // backfilled
  // The backfilled entry makes the next process's lookup a disk hit, with Redis gone.
  server_->stop();
  Cache b_again(b_config);
  const CacheResult disk = b_again.compile(request(salt_));
  EXPECT_EQ(disk.tier, Source::disk);
  EXPECT_EQ(b_again.stats().remote_misses + b_again.stats().remote_errors, 0u);
  // Remote hits are persisted in the store's counters (what `cubby stats` shows).
  auto counters = StoreStats(b_config.dir).read();
  ASSERT_TRUE(counters);
  EXPECT_EQ(counters->at("hits_remote"), 1);
}

// A fresh runner of the fleet learns a suite's recipes from the remote: `cubby warm` there fetches
// the manifest another machine recorded, and its workers find the entries in the remote.
TEST_F(RemoteCacheTest, ASuitesRecipesReachAFreshRunnerThroughTheRemote) {
  Config a_config = machine("a");
  a_config.suite = "fleet suite " + salt_;
  {
    Cache a(a_config);
    (void)a.compile(request(salt_));
  }  // finish: the manifest is queued for the remote and drained
  ASSERT_TRUE(remote_has(manifest_key(a_config.suite)));
  const Config b_config = machine("b");
  const testing::CliOutputFiles files{b_config.dir / "out", b_config.dir / "err"};
  const testing::CliOutcome run = testing::finish_cli(
      testing::start_cli({"warm", "--suite", a_config.suite, "--json"}, b_config.dir, files,
                         {"CUBBY_REMOTE=" + b_config.remote_url}),
      files);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto summary = testing::cli_json(run);
  EXPECT_EQ(summary["recipes"], 1);
  EXPECT_EQ(summary["hits"], 1) << summary.dump();  // from the remote, not compiled again
  EXPECT_EQ(summary["compiled"], 0);
  auto saved = load_manifest(b_config.dir, a_config.suite);  // kept for the next warm
  ASSERT_TRUE(saved && *saved);
  EXPECT_EQ((*saved)->recipes.size(), 1u);
}

// Blobs (CuPy's kernels through the adapter) go to the fleet like compiled entries: written to the
// remote, read through on a fresh runner and back-filled to its disk; read mode writes nothing; a
// remote value that is another blob is never served.
// A fresh runner reads its suite's entries ahead: the keys the first machine's run used reach it
// through the remote, its lookups take the entries fetched ahead, and a key that went stale (the
// program changed) costs a fetch, never a wrong kernel.
TEST_F(RemoteCacheTest, AFreshRunnerReadsItsSuitesEntriesAheadAndAStaleKeyIsOnlyAFetch) {
  Config a_config = machine("a");
  a_config.suite = "read-ahead suite " + salt_;
  CacheResult one, two;
  {
    Cache a(a_config);
    one = a.compile(request(salt_, 1));
    two = a.compile(request(salt_, 2));
  }
  auto listed = command({"GET", RedisBackend::redis_key(suite_keys_key(a_config.suite))});
  ASSERT_TRUE(listed && listed->value && !listed->value->empty())
      << "the suite's keys were not uploaded";

  Config b_config = machine("b");
  b_config.suite = a_config.suite;
  {
    Cache b(b_config);
    ASSERT_TRUE(read_ahead(b, 2));
    const CacheResult got = b.compile(request(salt_, 2));
    EXPECT_EQ(got.tier, Source::remote);
    EXPECT_EQ(got.entry->payload, two.entry->payload);
    EXPECT_EQ(b.compile(request(salt_, 1)).tier, Source::remote);
    b.finish();
    const Stats stats = b.stats();
    EXPECT_EQ(stats.hits_remote, 2u);
    EXPECT_EQ(stats.remote_read_ahead, 2u);
    EXPECT_EQ(stats.remote_read_ahead_taken, 2u);
    // Nothing new for the fleet: its keys held every recipe of this run, so neither the keys
    // nor the manifest (this store's first record of the suite) are sent back.
    EXPECT_EQ(stats.remote_writes, 0u);
  }
  // The fleet's keys are kept in the runner's store, for its own uploads to extend.
  auto kept = decode_suite_keys(testing::read_text(suite_keys_path(b_config.dir, a_config.suite)));
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->keys.size(), 2u);

  // Program 2 changed: the fleet's key for it is stale. Fetched ahead, never used: compiled.
  Config c_config = machine("c");
  c_config.suite = a_config.suite;
  {
    Cache c(c_config);
    ASSERT_TRUE(read_ahead(c, 2));
    CompileRequest changed = request(salt_, 2);
    changed.source += "// changed\n";
    const CacheResult got = c.compile(changed);
    EXPECT_EQ(got.tier, Source::compiled);
    EXPECT_NE(got.key, two.key);
    EXPECT_EQ(c.compile(request(salt_, 1)).tier, Source::remote);
    c.finish();
    EXPECT_EQ(c.stats().remote_read_ahead, 2u);
    EXPECT_EQ(c.stats().remote_read_ahead_taken, 1u);
  }
  // Its run uploaded the new key of program 2, first, with program 1's kept.
  auto updated = command({"GET", RedisBackend::redis_key(suite_keys_key(a_config.suite))});
  ASSERT_TRUE(updated && updated->value);
  EXPECT_NE(updated->value, listed->value);

  // Off (CUBBY_REMOTE_READ_AHEAD=0), or a warm store: nothing is read ahead.
  Config d_config = machine("d");
  d_config.suite = a_config.suite;
  d_config.remote_read_ahead = false;
  {
    Cache d(d_config);
    EXPECT_EQ(d.compile(request(salt_, 1)).tier, Source::remote);
    d.finish();
    EXPECT_EQ(d.stats().remote_read_ahead, 0u);
  }
  {
    Cache b_warm(b_config);
    EXPECT_EQ(b_warm.compile(request(salt_, 1)).tier, Source::disk);
    b_warm.finish();
    EXPECT_EQ(b_warm.stats().remote_read_ahead, 0u);
  }
  // A read-only store is never written, not even the read-ahead's lock: none.
  Config e_config = machine("e");
  e_config.suite = a_config.suite;
  e_config.read_only = true;
  {
    Cache e(e_config);
    EXPECT_EQ(e.compile(request(salt_, 1)).tier, Source::remote);
    e.finish();
    EXPECT_EQ(e.stats().remote_read_ahead, 0u);
  }
  EXPECT_FALSE(std::filesystem::exists(e_config.dir / "manifests"));
}

// Processes started together on one fresh store (xdist workers) read ahead once, not each.
TEST_F(RemoteCacheTest, OneProcessPerFreshStoreAndSuiteReadsAhead) {
  Config a_config = machine("a");
  a_config.suite = "read-ahead once " + salt_;
  {
    Cache a(a_config);
    a.compile(request(salt_, 1));
  }
  Config b_config = machine("b");
  b_config.suite = a_config.suite;
  Cache first(b_config);
  ASSERT_TRUE(read_ahead(first, 1));  // its plan ran: it holds the claim until it stops
  Cache second(b_config);
  // A remote lookup waits for its Cache's plan: once this one returns (a program the store and
  // the remote lack, so it asks the remote), the second's plan has found the claim. (A program the
  // first takes could come from the store folder they share, the remote never asked.)
  EXPECT_EQ(second.compile(request(salt_, 2)).tier, Source::compiled);
  EXPECT_EQ(first.compile(request(salt_, 1)).tier, Source::remote);
  second.finish();  // while the first still holds the claim
  first.finish();
  EXPECT_EQ(first.stats().remote_read_ahead_taken, 1u);
  EXPECT_EQ(second.stats().remote_read_ahead, 0u);
}

TEST_F(RemoteCacheTest, BlobsAreSharedThroughTheRemoteLikeCompiledEntries) {
  const std::string name = "kernel-" + salt_;
  const std::string payload = "cubin bytes of " + salt_;
  {
    Cache a(machine("a"));
    (void)a.store_blob("cupy", name, payload, 12.5);
  }  // finish drains the write
  ASSERT_TRUE(remote_has(blob_key("cupy", name)));
  const Config b_config = machine("b");
  {
    Cache b(b_config);
    const auto hit = b.load_blob("cupy", name);
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->tier, Source::remote);
    EXPECT_EQ(hit->entry->payload, payload);
    EXPECT_EQ(b.stats().hits_remote, 1u);
    EXPECT_FALSE(b.load_blob("cupy", name + "-other").has_value());  // a counted remote miss
    EXPECT_EQ(b.stats().remote_misses, 1u);
  }  // destruction waits for the back-fill
  Config b_offline = b_config;
  b_offline.remote_url.clear();
  Cache b_again(b_offline);
  const auto disk = b_again.load_blob("cupy", name);
  ASSERT_TRUE(disk.has_value());
  EXPECT_EQ(disk->tier, Source::disk);
  // Read mode: looked up, never written.
  Config reader = machine("c");
  reader.remote_read_only = true;
  {
    Cache c(reader);
    (void)c.store_blob("cupy", name + "-read", payload, 1.0);
  }
  EXPECT_FALSE(remote_has(blob_key("cupy", name + "-read")));
  // Another blob's bytes under this blob's key: rejected, not served.
  {
    Cache d(machine("d"));
    (void)d.store_blob("cupy", name + "-d", "other payload", 1.0);
  }
  auto other = command({"GET", RedisBackend::redis_key(blob_key("cupy", name + "-d"))});
  ASSERT_TRUE(other.has_value() && other->value.has_value());
  ASSERT_TRUE(
      command({"SET", RedisBackend::redis_key(blob_key("cupy", name + "-x")), *other->value})
          .has_value());
  Cache e(machine("e"));
  EXPECT_FALSE(e.load_blob("cupy", name + "-x").has_value());
  EXPECT_EQ(e.stats().remote_rejected, 1u);
}

TEST_F(RemoteCacheTest, RemoteHitTakesNoCompileLockAndCreatesNoLockFiles) {
  Key key;
  {
    Cache a(machine("a"));
    key = a.compile(request(salt_)).key;
  }
  // Another process of machine b holds the key's compile lock (compiling, or hung): a remote hit
  // must not wait for it (the wait would be kCompileLockWait, minutes).
  const Config b_config = machine("b");
  auto held = FileLock::try_acquire(DiskTier(b_config.dir).lock_path_of(key));
  ASSERT_TRUE(held && held->has_value());
  {
    Cache b(b_config);
    EXPECT_EQ(b.compile(request(salt_)).tier, Source::remote);
  }
  DiskTier b_disk(b_config.dir);
  EXPECT_EQ(count_entries(b_disk), 1u);  // backfilled although the lock was held
  // A fresh runner served by the remote creates no lock files (and no stats lock) at all.
  const Config c_config = machine("c");
  {
    Cache c(c_config);
    EXPECT_EQ(c.compile(request(salt_)).tier, Source::remote);
  }
  EXPECT_FALSE(std::filesystem::exists(c_config.dir / "locks"));
  DiskTier c_disk(c_config.dir);
  EXPECT_EQ(count_entries(c_disk), 1u);
  auto counters = StoreStats(c_config.dir).read();
  ASSERT_TRUE(counters);
  EXPECT_EQ(counters->at("hits_remote"), 1);
  EXPECT_EQ(counters->at("store_entries"), 1);  // the size estimate counts the backfill
}

TEST_F(RemoteCacheTest, RedisKilledMidRunFallsBackToCompiling) {
  if (!private_server())
    GTEST_SKIP() << "needs a private redis-server (it is stopped, paused or counted)";
  {
    Cache a(machine("a"));
    a.compile(request(salt_, 0));
  }
  Cache b(machine("b"));
  EXPECT_EQ(b.compile(request(salt_, 0)).tier, Source::remote);
  server_->stop();
  const CacheResult compiled = b.compile(request(salt_, 1));
  EXPECT_EQ(compiled.tier, Source::compiled);
  EXPECT_EQ(compiled.entry->lowered_names.size(), 2u);
  EXPECT_EQ(b.compile(request(salt_, 2)).tier, Source::compiled);
  const Stats stats = b.stats();
  EXPECT_EQ(stats.remote_errors, 1u);   // the first lookup after the kill
  EXPECT_GE(stats.remote_skipped, 1u);  // then the remote is not asked again for a while
  EXPECT_EQ(stats.remote_misses, 2u);
  EXPECT_EQ(stats.compiles, 2u);
}

TEST_F(RemoteCacheTest, FinishLandsWritesAndBackfillsWhileTheCacheLives) {
  // What a Cache that lives until exit (the GoogleTest harness's) relies on.
  Cache a(machine("a"));
  const CacheResult first = a.compile(request(salt_));
  a.finish();
  EXPECT_TRUE(remote_has(first.key));  // the queued write was sent
  EXPECT_EQ(a.stats().remote_writes, 1u);
  const Config b_config = machine("b");
  Cache b(b_config);
  EXPECT_EQ(b.compile(request(salt_)).tier, Source::remote);
  b.finish();
  DiskTier b_disk(b_config.dir);
  EXPECT_EQ(count_entries(b_disk), 1u);  // backfilled with `b` still alive
  auto counters = StoreStats(b_config.dir).read();
  ASSERT_TRUE(counters);
  EXPECT_EQ(counters->at("hits_remote"), 1);
  EXPECT_EQ(b.compile(request(salt_)).tier, Source::memory);  // still usable
}

TEST_F(RemoteCacheTest, FreshStoreConnectsAheadAndWarmStoreNeverConnects) {
  if (!private_server())
    GTEST_SKIP() << "needs a private redis-server (it is stopped, paused or counted)";
  const Config config = machine("a");
  const std::uint64_t before = server_->connections_received();
  {
    Cache fresh(config);  // no entries yet: connects at once, before any lookup
    EXPECT_EQ(server_->await_connections_since(before), 1u);
    EXPECT_EQ(fresh.compile(request(salt_)).tier, Source::compiled);
  }
  const std::uint64_t warm_before = server_->connections_received();
  {
    Cache warm(config);  // entries on disk: served locally, Redis never asked
    EXPECT_EQ(warm.compile(request(salt_)).tier, Source::disk);
  }
  EXPECT_EQ(server_->connections_received() - warm_before - 1, 0u);
}

TEST_F(RemoteCacheTest, PausedRedisTimesOutAndCompilesLocally) {
  if (!private_server())
    GTEST_SKIP() << "needs a private redis-server (it is stopped, paused or counted)";
  Config config = machine("b");
  config.remote_timeout_ms = 200;
  Cache b(config);
  b.compile(request(salt_, 0));  // a pooled connection
  // Its remote write (background) lands before the pause, else it would time out too.
  for (int i = 0; i < 1000 && b.stats().remote_writes == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(b.stats().remote_writes, 1u);
  server_->pause();
  // Would hang forever without the timeout; returns after it, compiled here.
  const CacheResult first = b.compile(request(salt_, 1));
  EXPECT_EQ(first.tier, Source::compiled);
  EXPECT_EQ(b.stats().remote_timeouts, 1u);
  const CacheResult second = b.compile(request(salt_, 2));
  EXPECT_EQ(second.tier, Source::compiled);
  const Stats stats = b.stats();
  EXPECT_EQ(stats.remote_timeouts, 1u);  // the second lookup did not wait
  EXPECT_GE(stats.remote_skipped, 1u);
  server_->resume();
}

TEST_F(RemoteCacheTest, GarbageTruncatedAndWrongEntriesAreRejectedThenRepaired) {
  CacheResult good;
  {
    Cache a(machine("a"));
    good = a.compile(request(salt_));
  }
  const std::string name = RedisBackend::redis_key(good.key);
  const std::string valid = command({"GET", name})->value.value();
  CacheResult other;
  {
    Cache c(machine("c"));
    other = c.compile(request(salt_, 0, true));  // another key, another set of names
  }
  const std::string other_entry =
      command({"GET", RedisBackend::redis_key(other.key)})->value.value();
  int round = 0;
  for (const std::string& bad : {std::string("garbage"), valid.substr(0, valid.size() / 2),
                                 valid.substr(0, valid.size() - 1), other_entry}) {
    SCOPED_TRACE(round++);
    ASSERT_TRUE(command({"SET", name, bad}));
    {
      Cache b(machine("b"));
      const CacheResult result = b.compile(request(salt_));
      EXPECT_EQ(result.tier, Source::compiled);  // never the bad entry
      EXPECT_EQ(result.entry->lowered_names, good.entry->lowered_names);
      EXPECT_EQ(b.stats().remote_rejected, 1u);
      EXPECT_EQ(b.stats().remote_misses, 1u);
    }
    // The compile overwrote the bad value: the next fresh machine is served by Redis.
    Cache d(machine("d"));
    EXPECT_EQ(d.compile(request(salt_)).tier, Source::remote);
  }
}

// An unsigned value is whatever anyone who can write the Redis stored: another program's entry
// with the same name expressions (so it passes every name check) copied to this key is refused.
TEST_F(RemoteCacheTest, AnEntryCopiedToAnotherKeyIsRejected) {
  CacheResult zero;
  CacheResult one;
  {
    Cache a(machine("a"));
    zero = a.compile(request(salt_, 0));
    one = a.compile(request(salt_, 1));
  }
  ASSERT_NE(zero.entry->payload, one.entry->payload);
  const auto copied = command({"GET", RedisBackend::redis_key(one.key)});
  ASSERT_TRUE(copied && copied->value);
  ASSERT_TRUE(command({"SET", RedisBackend::redis_key(zero.key), *copied->value}));
  Cache b(machine("b"));
  const CacheResult result = b.compile(request(salt_, 0));
  EXPECT_EQ(result.tier, Source::compiled);
  EXPECT_NE(result.entry->payload, one.entry->payload);
  EXPECT_EQ(b.stats().remote_rejected, 1u);
  EXPECT_EQ(b.stats().hits_remote, 0u);
}

TEST_F(RemoteCacheTest, WronglySignedAndUnsignedEntriesAreRejected) {
  Config alpha = machine("alpha");
  alpha.remote_secret = "alpha-secret";
  CacheResult signed_result;
  {
    Cache a(alpha);
    signed_result = a.compile(request(salt_, 0));
  }
  Config beta = machine("beta");
  beta.remote_secret = "beta-secret";
  {
    Cache b(beta);
    EXPECT_EQ(b.compile(request(salt_, 0)).tier, Source::compiled);
    EXPECT_EQ(b.stats().remote_rejected, 1u);
  }
  {
    Cache unsigned_writer(machine("plain"));  // no secret: writes unsigned entries
    unsigned_writer.compile(request(salt_, 1));
  }
  Config alpha2 = machine("alpha2");
  alpha2.remote_secret = "alpha-secret";
  {
    Cache a2(alpha2);
    EXPECT_EQ(a2.compile(request(salt_, 0)).tier, Source::compiled);  // signed by beta now
    EXPECT_EQ(a2.compile(request(salt_, 1)).tier, Source::compiled);  // unsigned
    EXPECT_EQ(a2.stats().remote_rejected, 2u);
    EXPECT_EQ(a2.stats().hits_remote, 0u);
  }
  Config alpha3 = machine("alpha3");  // alpha2's writes are signed with alpha's secret again
  alpha3.remote_secret = "alpha-secret";
  Cache a3(alpha3);
  const CacheResult remote = a3.compile(request(salt_, 0));
  EXPECT_EQ(remote.tier, Source::remote);
  EXPECT_EQ(remote.entry->lowered_names, signed_result.entry->lowered_names);
  EXPECT_EQ(a3.compile(request(salt_, 1)).tier, Source::remote);
  EXPECT_EQ(a3.stats().remote_rejected, 0u);
}

TEST_F(RemoteCacheTest, ReadModeReadsButWritesNothing) {
  if (!private_server())
    GTEST_SKIP() << "needs a private redis-server (it is stopped, paused or counted)";
  Config reader = machine("pr");
  reader.remote_read_only = true;
  CacheResult compiled;
  {
    Cache pr(reader);
    compiled = pr.compile(request(salt_, 0));
    EXPECT_EQ(compiled.tier, Source::compiled);
    EXPECT_EQ(count_entries(DiskTier(pr.config().dir)), 1u);  // the local store is still written
  }
  EXPECT_FALSE(remote_has(compiled.key));
  EXPECT_EQ(command({"DBSIZE"})->value, "0");
  {
    Cache writer(machine("main"));
    writer.compile(request(salt_, 1));
  }
  Config reader2 = machine("pr2");
  reader2.remote_read_only = true;
  Cache pr2(reader2);
  EXPECT_EQ(pr2.compile(request(salt_, 1)).tier, Source::remote);  // reads are allowed
  EXPECT_EQ(pr2.compile(request(salt_, 2)).tier, Source::compiled);
  EXPECT_EQ(pr2.stats().remote_writes + pr2.stats().remote_writes_dropped, 0u);
  EXPECT_EQ(command({"DBSIZE"})->value, "1");
}

TEST_F(RemoteCacheTest, TwoMachinesRaceOnOneKey) {
  const Config a_config = machine("a");
  const Config b_config = machine("b");
  std::barrier start(2);
  CacheResult results[2];
  auto run = [&](int i, const Config& config) {
    Cache cache(config);
    start.arrive_and_wait();
    results[i] = cache.compile(request(salt_));
  };
  std::thread a(run, 0, std::cref(a_config));
  std::thread b(run, 1, std::cref(b_config));
  a.join();
  b.join();
  ASSERT_EQ(results[0].key, results[1].key);
  for (const auto& result : results) {
    EXPECT_TRUE(result.tier == Source::compiled || result.tier == Source::remote);
    EXPECT_EQ(result.entry->lowered_names.size(), 2u);
  }
  ASSERT_TRUE(remote_has(results[0].key));
  Cache c(machine("c"));  // whichever write won, it is a whole, valid entry
  const CacheResult third = c.compile(request(salt_));
  EXPECT_EQ(third.tier, Source::remote);
  EXPECT_EQ(third.entry->lowered_names, results[0].entry->lowered_names);
  EXPECT_EQ(c.stats().remote_rejected, 0u);
}

TEST_F(RemoteCacheTest, CredentialsAreNeverPrinted) {
  if (!private_server())
    GTEST_SKIP() << "needs a private redis-server (it is stopped, paused or counted)";
  ASSERT_TRUE(command({"CONFIG", "SET", "requirepass", "hunter2-right"}));
  const std::string base = "127.0.0.1:" + std::to_string(port_);
  Config wrong = machine("wrong");
  wrong.remote_url = "redis://:hunter2-wrong@" + base;
  ::testing::internal::CaptureStderr();
  Stats stats;
  {
    Cache cache(wrong);
    EXPECT_EQ(cache.compile(request(salt_)).tier, Source::compiled);
    stats = cache.stats();
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(stats.remote_errors, 1u);
  EXPECT_NE(err.find("redis://***@" + base), std::string::npos) << err;
  EXPECT_EQ(err.find("hunter2"), std::string::npos) << err;
  EXPECT_EQ(stats_to_json(stats).dump().find("hunter2"), std::string::npos);

  Config right = machine("right");
  right.remote_url = "redis://:hunter2-right@" + base;
  {
    Cache writer(right);
    writer.compile(request(salt_, 1));
  }
  Config right2 = machine("right2");
  right2.remote_url = right.remote_url;
  Cache reader(right2);
  EXPECT_EQ(reader.compile(request(salt_, 1)).tier, Source::remote);
}

TEST_F(RemoteCacheTest, RejectedEntryMessageSaysWhatIsTrueOfARemoteEntry) {
  CacheResult good;
  {
    Cache a(machine("a"));
    good = a.compile(request(salt_));
  }
  ASSERT_TRUE(command({"SET", RedisBackend::redis_key(good.key), "garbage"}));
  for (const bool read_mode : {true, false}) {
    SCOPED_TRACE(read_mode);
    Config config = machine(read_mode ? "reader" : "writer");
    config.remote_read_only = read_mode;
    ::testing::internal::CaptureStderr();
    {
      Cache b(config);
      EXPECT_EQ(b.compile(request(salt_)).tier, Source::compiled);
      EXPECT_EQ(b.stats().remote_rejected, 1u);
    }
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("remote entry " + good.key.hex()), std::string::npos) << err;
    // `cubby verify --fix` checks only the local store: never the advice for a remote entry.
    EXPECT_EQ(err.find("verify --fix"), std::string::npos) << err;
    EXPECT_NE(err.find(read_mode ? "a process that writes the remote replaces it"
                                 : "the upload of this compile replaces it"),
              std::string::npos)
        << err;
  }
  Cache c(machine("c"));  // the writer's upload did replace it
  EXPECT_EQ(c.compile(request(salt_)).tier, Source::remote);
}

TEST(RemoteCacheDrip, CacheWhoseRemoteWriteIsDrippedIsDestroyedWithinTheDocumentedBound) {
  // Lookups find nothing at once; the write's reply ("+OOOO...") drips for ever, a byte every
  // 20 ms, so that no single read waits as long as the timeout.
  testing::DripServer server({{"GET", {"$-1\r\n", ""}}, {"SET", {"+", "O"}}},
                             std::chrono::milliseconds(20));
  TempDir dir("remote-drip");
  Config config;
  config.dir = dir.path();
  config.remote_url = server.url();
  config.remote_timeout_ms = 300;
  // The bound Cache::finish and ~Cache document for queued remote writes.
  const auto bound = std::max<std::chrono::milliseconds>(
      std::chrono::seconds(1), 4 * std::chrono::milliseconds(config.remote_timeout_ms));
  auto cache = std::make_unique<Cache>(config);
  std::random_device random;
  EXPECT_EQ(cache->compile(request(std::to_string(random()))).tier, Source::compiled);
  ASSERT_TRUE(server.await("SET", std::chrono::seconds(10)));  // the write is being dripped
  const auto took = testing::duration_of(server, [&] { cache.reset(); });
  EXPECT_LT(took, bound);
}

TEST_F(RemoteCacheTest, DisabledCacheNeverAsksTheRemote) {
  {
    Cache a(machine("a"));
    a.compile(request(salt_));
  }
  Config off = machine("off");
  off.disabled = true;
  Cache cache(off);
  EXPECT_EQ(cache.compile(request(salt_)).tier, Source::compiled);
  EXPECT_EQ(cache.stats().hits_remote + cache.stats().remote_misses, 0u);
}

}  // namespace
}  // namespace cubby
