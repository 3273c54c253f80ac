// Cache::read_ahead_suite: a suite's recorded entries read into memory before the run asks.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "cubby/cache.hpp"
#include "storage/local/disk.hpp"
#include "storage/local/manifests.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using testing::read_text;
using testing::TempDir;
using testing::write_text;

constexpr const char* kSuite = "read-ahead suite";

// A suite's program: its own kernel, and one that includes <ops.cuh> through -I<dir>/include.
CompileRequest program(const std::string& tag, const std::filesystem::path& dir) {
  CompileRequest r;
  r.source = "#include <ops.cuh>\n__global__ void k_" + tag + "(int* p) { *p = twice(1); }\n";
  r.program_name = tag + ".cu";
  r.options = {"-I" + (dir / "include").string()};
  r.name_expressions = {"k_" + tag};
  r.arch = "sm_90";
  return r;
}

void write_ops(const std::filesystem::path& dir, const char* body) {
  write_text(dir / "include" / "ops.cuh",
             std::string("#pragma once\n__device__ int twice(int v) { return ") + body + "; }\n");
}

Config suite_config(const std::filesystem::path& dir) {
  Config config;
  config.dir = dir / "store";
  config.suite = kSuite;
  return config;
}

// A first run of the suite over `tags`: compiled, stored and recorded (at the Cache's end).
std::vector<Key> record_run(const Config& config, const std::filesystem::path& dir,
                            const std::vector<std::string>& tags) {
  std::vector<Key> keys;
  Cache cache(config);
  for (const std::string& tag : tags) {
    const CacheResult result = cache.compile(program(tag, dir));
    EXPECT_EQ(result.tier, Source::compiled);
    keys.push_back(result.key);
  }
  return keys;
}

TEST(CacheReadAhead, TheSuitesRecordedEntriesAreReadIntoMemoryAndTheRunHitsThere) {
  TempDir dir("read-ahead");
  write_ops(dir.path(), "v + v");
  const Config config = suite_config(dir.path());
  const std::vector<Key> keys = record_run(config, dir.path(), {"a", "b", "c"});

  Cache cache(config);
  const Cache::ReadAhead first = cache.read_ahead_suite();
  EXPECT_EQ(first.read, 3u);
  EXPECT_EQ(first.lacking, 0u);  // a run of the recorded programs misses nothing
  const Stats read = cache.stats();
  EXPECT_EQ(read.hits_memory + read.hits_disk + read.misses + read.compiles, 0u);  // none counted
  for (std::size_t i = 0; i < 3; ++i) {
    const CacheResult result =
        cache.compile(program(std::string(1, static_cast<char>('a' + i)), dir.path()));
    EXPECT_EQ(result.tier, Source::memory);
    EXPECT_EQ(result.key, keys[i]);
    EXPECT_EQ(result.entry->lowered_names.size(), 1u);
  }
  const Stats stats = cache.stats();
  EXPECT_EQ(stats.hits_memory, 3u);
  EXPECT_EQ(stats.hits_disk, 0u);
  EXPECT_EQ(stats.misses, 0u);
  // What is in memory already is not read again, and is not lacking.
  const Cache::ReadAhead again = cache.read_ahead_suite();
  EXPECT_EQ(again.read, 0u);
  EXPECT_EQ(again.lacking, 0u);
}

TEST(CacheReadAhead, ARecipeWhoseHeaderWasEditedIsLeftToCompileWhichServesTheNewKernel) {
  TempDir dir("read-ahead-edit");
  write_ops(dir.path(), "v + v");
  const Config config = suite_config(dir.path());
  const std::vector<Key> keys = record_run(config, dir.path(), {"a", "b"});
  write_ops(dir.path(), "3 * v");  // both programs include it: both keys change

  Cache cache(config);
  const Cache::ReadAhead done = cache.read_ahead_suite();
  EXPECT_EQ(done.read, 0u);
  EXPECT_EQ(done.lacking, 2u);  // the run will miss: a prefetch has work
  const CacheResult result = cache.compile(program("a", dir.path()));
  EXPECT_EQ(result.tier, Source::compiled);
  EXPECT_NE(result.key, keys[0]);
  const Stats stats = cache.stats();
  EXPECT_EQ(stats.hits_memory, 0u);
  EXPECT_EQ(stats.misses, 1u);
}

TEST(CacheReadAhead, ABadEntryIsNotReadAndTheRunCompilesItAgain) {
  TempDir dir("read-ahead-bad");
  write_ops(dir.path(), "v + v");
  const Config config = suite_config(dir.path());
  const std::vector<Key> keys = record_run(config, dir.path(), {"a", "b"});
  const std::filesystem::path path = DiskTier(config.dir).path_of(keys[1]);
  std::string bytes = read_text(path);
  ASSERT_GT(bytes.size(), 100u);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5a);
  write_text(path, bytes);

  Cache cache(config);
  const Cache::ReadAhead done = cache.read_ahead_suite();
  EXPECT_EQ(done.read, 1u);
  EXPECT_EQ(done.lacking, 1u);
  EXPECT_EQ(cache.stats().corrupt, 1u);  // found, said and removed as a lookup does
  EXPECT_EQ(cache.compile(program("a", dir.path())).tier, Source::memory);
  const CacheResult again = cache.compile(program("b", dir.path()));
  EXPECT_EQ(again.tier, Source::compiled);
  EXPECT_EQ(again.key, keys[1]);
}

TEST(CacheReadAhead, ItReadsNoMoreThanTheMemoryTierHoldsAndStopsWhenAsked) {
  TempDir dir("read-ahead-bounds");
  write_ops(dir.path(), "v + v");
  Config config = suite_config(dir.path());
  record_run(config, dir.path(), {"a", "b", "c"});

  config.memory_entries = 2;
  const Cache::ReadAhead bounded = Cache(config).read_ahead_suite();
  EXPECT_EQ(bounded.read, 2u);
  EXPECT_EQ(bounded.lacking, 1u);  // not looked at: it may be missing
  std::atomic<int> asked{0};
  const Cache::ReadAhead stopped = Cache(config).read_ahead_suite([&asked] { return ++asked > 1; });
  EXPECT_EQ(stopped.read, 1u);
  EXPECT_EQ(stopped.lacking, 2u);
  EXPECT_EQ(asked.load(), 2);
}

TEST(CacheReadAhead, NothingIsReadWithoutASuiteOrItsManifestOrWhenDisabled) {
  TempDir dir("read-ahead-none");
  write_ops(dir.path(), "v + v");
  Config config = suite_config(dir.path());
  record_run(config, dir.path(), {"a"});

  Config no_suite = config;
  no_suite.suite.clear();
  Config other = config;
  other.suite = "never ran";
  Config disabled = config;
  disabled.disabled = true;
  for (const Config& none : {no_suite, other, disabled}) {
    const Cache::ReadAhead done = Cache(none).read_ahead_suite();
    EXPECT_EQ(done.read, 0u) << none.suite;
    EXPECT_EQ(done.lacking, 0u) << none.suite;  // nothing recorded: nothing to prefetch
  }
  EXPECT_EQ(Cache(config).read_ahead_suite().read, 1u);
}

TEST(CacheReadAhead, AnUnreadableManifestLeavesWhatIsLackingUnknown) {
  TempDir dir("read-ahead-unreadable");
  write_ops(dir.path(), "v + v");
  const Config config = suite_config(dir.path());
  record_run(config, dir.path(), {"a"});
  write_text(manifest_path(config.dir, kSuite), "not a manifest");

  const Cache::ReadAhead done = Cache(config).read_ahead_suite();
  EXPECT_EQ(done.read, 0u);
  EXPECT_EQ(done.lacking, Cache::ReadAhead::kUnknown);
}

}  // namespace
}  // namespace cubby
