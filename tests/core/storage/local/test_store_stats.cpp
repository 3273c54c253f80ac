// Persisted store counters (core/src/storage/local/store_stats.cpp): format, merge across
// processes, journal, garbage files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "storage/local/store_stats.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using testing::TempDir;
using testing::write_text;

TEST(Counters, FormatAndParseRoundTrip) {
  const Counters counters{{"compiles", 3}, {"store_bytes", -5}, {"future_counter", 1ll << 40}};
  auto parsed = parse_counters(format_counters(counters));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(*parsed, counters);
}

TEST(Counters, GarbageIsCorrupt) {
  for (const char* text : {"compiles\n", "compiles x\n", "Compiles 1\n", "a 1 2\n", "\xff 1\n",
                           "a 99999999999999999999\n"}) {
    auto parsed = parse_counters(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error().code, Errc::corrupt);
  }
}

TEST(StoreStats, AddAndAppendSumAcrossCalls) {
  TempDir dir("stats");
  StoreStats stats(dir.path());
  auto empty = stats.read();
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  ASSERT_TRUE(stats.add({{"compiles", 2}, {"store_bytes", 100}}).ok());
  ASSERT_TRUE(stats.append({{"compiles", 1}, {"hits_disk", 5}}).ok());
  ASSERT_TRUE(stats.append({{"hits_disk", 1}}).ok());
  auto read = stats.read();
  ASSERT_TRUE(read.ok());
  EXPECT_EQ((*read)["compiles"], 3);
  EXPECT_EQ((*read)["hits_disk"], 6);
  EXPECT_EQ((*read)["store_bytes"], 100);
  // An update folds the journal in.
  auto totals = stats.add({{"store_bytes", -40}});
  ASSERT_TRUE(totals.ok());
  EXPECT_EQ((*totals)["hits_disk"], 6);
  EXPECT_EQ((*totals)["store_bytes"], 60);
  EXPECT_FALSE(std::filesystem::exists(dir / "stats/journal"));
  EXPECT_EQ(*stats.read(), *totals);
  struct stat info {};
  ASSERT_EQ(::stat(stats.file().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0664u);
}

TEST(StoreStats, GarbageFileIsReportedThenReset) {
  TempDir dir("stats");
  StoreStats stats(dir.path());
  write_text(stats.file(), "this is not a counters file\n");
  auto read = stats.read();
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, Errc::corrupt);
  EXPECT_NE(read.error().message.find("reset"), std::string::npos);
  auto totals = stats.add({{"compiles", 1}});
  ASSERT_TRUE(totals.ok());
  EXPECT_EQ(*totals, (Counters{{"compiles", 1}}));
}

TEST(StoreStats, TornAndForeignJournalLinesAreSkipped) {
  TempDir dir("stats");
  StoreStats stats(dir.path());
  write_text(dir / "stats/journal", "compiles=2 junk bad=x =3\nhits_disk=1\nmisses=7");
  auto read = stats.read();
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, (Counters{{"compiles", 2}, {"hits_disk", 1}}));  // "misses=7" is torn
}

// Negative deltas of counters that only count up are skipped, sums saturate instead of
// overflowing, and no counter reads below 0 (only the store_* size estimate takes negative
// deltas, and it stops at 0).
TEST(StoreStats, NegativeAndOverflowingValuesNeverReadAsNegativeCounters) {
  TempDir dir("stats");
  StoreStats stats(dir.path());
  write_text(stats.file(), "compiles 3\nstore_bytes 50\nmisses -4\n");
  write_text(dir / "stats/journal",
             "compiles=-5 hits_disk=9223372036854775807\n"
             "hits_disk=10\n"
             "hits_memory=99999999999999999999\n"
             "store_bytes=-100 store_entries=-1 evictions=-9223372036854775808\n");
  const Counters expected = {{"compiles", 3},
                             {"store_bytes", 0},
                             {"misses", 0},
                             {"hits_disk", INT64_MAX},
                             {"store_entries", 0}};
  auto read = stats.read();
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(*read, expected);
  // The same once folded into the counters file by an update, and adds saturate too.
  auto folded = stats.add({{"hits_disk", 1}, {"compiles", 1}});
  ASSERT_TRUE(folded.ok()) << folded.error().message;
  Counters after = expected;
  after["compiles"] = 4;
  EXPECT_EQ(*folded, after);
  for (const auto& [name, value] : *folded) EXPECT_GE(value, 0) << name;
}

TEST(StoreStats, ConcurrentProcessesLoseNoLockedUpdate) {
  TempDir dir("stats");
  constexpr int kProcesses = 8;
  constexpr int kAdds = 50;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      StoreStats stats(dir.path());
      for (int i = 0; i < kAdds; ++i) {
        if (!stats.add({{"compiles", 1}}).ok()) ::_exit(1);
        if (!stats.append({{"hits_disk", 1}}).ok()) ::_exit(1);
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  auto read = StoreStats(dir.path()).read();
  ASSERT_TRUE(read.ok());
  EXPECT_EQ((*read)["compiles"], kProcesses * kAdds);
  // Journal appends racing a fold may be lost (documented); never more than were made.
  EXPECT_LE((*read)["hits_disk"], kProcesses * kAdds);
  EXPECT_GT((*read)["hits_disk"], 0);
}

}  // namespace
}  // namespace cubby
