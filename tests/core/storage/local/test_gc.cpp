// Store maintenance (core/src/storage/local/gc.cpp): LRU eviction by mtime, group trims, leftover
// cleanup, and what it must leave alone.
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <vector>

#include "storage/local/gc.hpp"
#include "storage/local/lock.hpp"
#include "storage/local/store_stats.hpp"
#include "test_support.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

Key key_with(std::uint8_t first, std::uint8_t last) {
  Key key;
  key.bytes.fill(0x11);
  key.bytes[0] = first;
  key.bytes[15] = last;
  return key;
}

// Sets `path`'s mtime to `seconds_ago` before now.
void age(const fs::path& path, int seconds_ago) {
  struct timespec times[2];
  ::clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= seconds_ago;
  times[1] = times[0];
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

std::set<std::string> keys_in(const DiskTier& disk) {
  std::set<std::string> keys;
  EXPECT_TRUE(disk.list([&](const DiskEntryInfo& info) { keys.insert(info.key.hex()); }).ok());
  return keys;
}

TEST(CollectGarbage, EvictsLeastRecentlyUsedFirstDownToTheTarget) {
  TempDir dir("gc");
  DiskTier disk(dir.path());
  // Ten 1000-byte entries; entry i was last used i hours ago.
  for (std::uint8_t i = 0; i < 10; ++i) {
    ASSERT_TRUE(
        disk.put(key_with(static_cast<std::uint8_t>(i * 16), i), std::string(1000, 'x')).ok());
    age(disk.path_of(key_with(static_cast<std::uint8_t>(i * 16), i)), i * 3600);
  }
  GcOptions options;
  options.max_size = 6500;
  options.target_ratio = 0.8;  // down to 5200 bytes: five entries stay
  auto report = collect_garbage(disk, options);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->entries_before, 10u);
  EXPECT_EQ(report->evicted, 5u);
  EXPECT_EQ(report->evicted_bytes, 5000u);
  EXPECT_EQ(report->bytes, 5000u);
  std::set<std::string> expected;
  for (std::uint8_t i = 0; i < 5; ++i)
    expected.insert(key_with(static_cast<std::uint8_t>(i * 16), i).hex());
  EXPECT_EQ(keys_in(disk), expected);
  // The size estimate is rewritten with the measured figures; evictions are counted.
  auto counters = StoreStats(dir.path()).read();
  ASSERT_TRUE(counters.ok());
  EXPECT_EQ((*counters)["store_bytes"], 5000);
  EXPECT_EQ((*counters)["store_entries"], 5);
  EXPECT_EQ((*counters)["evictions"], 5);
}

TEST(ClearStore, RemovesEveryEntryAndEmptiesTheSizeEstimate) {
  TempDir dir("clear-store");
  DiskTier disk(dir.path());
  for (std::uint8_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(disk.put(key_with(i, i), std::string(100, 'x')).ok());
  }
  ASSERT_TRUE(StoreStats(dir.path()).add({{"store_bytes", 300}, {"store_entries", 3}}).ok());
  auto removed = clear_store(disk);
  ASSERT_TRUE(removed.ok()) << removed.error().message;
  EXPECT_EQ(*removed, 3u);
  EXPECT_TRUE(keys_in(disk).empty());
  auto counters = StoreStats(dir.path()).read();
  ASSERT_TRUE(counters.ok());
  EXPECT_EQ((*counters)["store_bytes"], 0);
  EXPECT_EQ((*counters)["store_entries"], 0);
}

TEST(CollectGarbage, WithinTheBoundEvictsNothing) {
  TempDir dir("gc");
  DiskTier disk(dir.path());
  for (std::uint8_t i = 0; i < 4; ++i)
    ASSERT_TRUE(disk.put(key_with(i, i), std::string(100, 'x')).ok());
  GcOptions options;
  options.max_size = 400;
  auto report = collect_garbage(disk, options);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->evicted, 0u);
  EXPECT_EQ(keys_in(disk).size(), 4u);
}

TEST(CollectGarbage, RemovesDeadLeftoversAndKeepsLiveOnesAndForeignFiles) {
  TempDir dir("gc");
  DiskTier disk(dir.path());
  const Key key = key_with(0xab, 1);
  ASSERT_TRUE(disk.put(key, "entry").ok());
  const fs::path dead_temp = fs::path(disk.path_of(key).string() + ".tmp.1.0123456789abcdef");
  const fs::path live_temp = fs::path(disk.path_of(key).string() + ".tmp.2.fedcba9876543210");
  write_text(dead_temp, "half an entry");
  write_text(live_temp, "a write in progress");
  age(dead_temp, 60);
  age(live_temp, 60);
  const int live_fd = ::open(live_temp.c_str(), O_RDONLY);
  ASSERT_GE(live_fd, 0);
  ASSERT_EQ(::flock(live_fd, LOCK_EX), 0);  // its writer still holds it
  write_text(disk.lock_path_of(key), "pid 1 host gone since 0\n");
  auto held = FileLock::try_acquire(disk.lock_path_of(key_with(0xcd, 2)));
  ASSERT_TRUE(held.ok() && held->has_value());
  write_text(dir / "entries/ab/README.txt", "foreign");
  write_text(dir / "notes.txt", "foreign");

  GcOptions options;
  options.max_size = 1 << 20;
  auto report = collect_garbage(disk, options);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->temp_removed, 1u);
  EXPECT_EQ(report->locks_removed, 1u);
  EXPECT_FALSE(fs::exists(dead_temp));
  EXPECT_TRUE(fs::exists(live_temp));
  EXPECT_FALSE(fs::exists(disk.lock_path_of(key)));
  EXPECT_TRUE(fs::exists(disk.lock_path_of(key_with(0xcd, 2))));
  EXPECT_TRUE(fs::exists(dir / "entries/ab/README.txt"));
  EXPECT_TRUE(fs::exists(dir / "notes.txt"));
  EXPECT_TRUE(fs::exists(disk.path_of(key)));
  ::close(live_fd);
}

// gc removes only the names cubby generates: anything else under locks/ and stats/ (foreign
// *.lock files, sub-folders, files that merely start like cubby's) stays, however old; cubby's
// own stale leftovers beside them still go.
TEST(CollectGarbage, LeavesForeignFilesInLocksAndStatsAlone) {
  TempDir dir("gc");
  DiskTier disk(dir.path());
  const Key key = key_with(0xab, 1);
  ASSERT_TRUE(disk.put(key, "entry").ok());
  const std::string hex = key.hex();
  const std::vector<fs::path> foreign = {
      dir / "locks/build.lock",
      dir / "locks/ab/build.lock",
      dir / "locks/ab" / (hex + ".lock.bak"),
      dir / "locks/cd" / (hex + ".lock"),  // key-shaped, but not in its own shard
      dir / "locks/ab/sub" / (hex + ".lock"),
      dir / "locks/deep/er/x.lock",
      dir / "stats/notes.txt",
      dir / "stats/counters.tmp.backup",
      dir / "stats/counters.tmp.1.0123456789abcdef.keep",
      dir / "stats/sub/counters.tmp.1.0123456789abcdef",
      dir / "entries/ab" / (hex + ".entry.tmp.mine"),
  };
  for (const fs::path& path : foreign) {
    write_text(path, "not cubby's");
    age(path, 3 * 86400);
  }
  const fs::path own_lock = disk.lock_path_of(key);
  const fs::path own_stats_temp = dir / "stats/counters.tmp.42.0123456789abcdef";
  const fs::path own_entry_temp = fs::path(disk.path_of(key).string() + ".tmp.42.0123456789abcdef");
  for (const fs::path& path : {own_lock, own_stats_temp, own_entry_temp}) {
    write_text(path, "left by a dead cubby");
    age(path, 3600);
  }

  GcOptions options;
  options.max_size = 1 << 20;
  auto report = collect_garbage(disk, options);
  ASSERT_TRUE(report.ok()) << report.error().message;
  for (const fs::path& path : foreign) EXPECT_TRUE(fs::exists(path)) << path;
  EXPECT_FALSE(fs::exists(own_lock));
  EXPECT_FALSE(fs::exists(own_stats_temp));
  EXPECT_FALSE(fs::exists(own_entry_temp));
  EXPECT_EQ(report->locks_removed, 1u);
  EXPECT_EQ(report->temp_removed, 2u);
  EXPECT_TRUE(fs::exists(disk.path_of(key)));
}

std::vector<std::string> files_under(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& item : fs::recursive_directory_iterator(folder)) {
    names.push_back(fs::relative(item.path(), folder).string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A locks/ or stats/ that is a link to someone's folder: gc refuses the store before it writes
// or removes anything there (its own lock, the counters, key-shaped lock names, cubby-shaped
// temp names). A linked shard folder is skipped: what it points at stays, however old.
TEST(CollectGarbage, NeverFollowsLinkedFolders) {
  TempDir dir("gc");
  TempDir other("gc-victim");
  DiskTier disk(dir.path());
  const Key key = key_with(0xab, 1);
  ASSERT_TRUE(disk.put(key, "entry").ok());
  const std::string hex = key.hex();
  const std::vector<fs::path> victims = {
      other / "locks/x.lock",
      other / "locks/gc.lock",
      other / "locks/ab" / (hex + ".lock"),
      other / "shard" / (hex + ".lock"),
      other / "stats/counters",
      other / "stats/counters.tmp.1.0123456789abcdef",
      other / "entries" / (key_with(0xcd, 1).hex() + ".entry.tmp.1.0123456789abcdef"),
  };
  for (const fs::path& path : victims) {
    write_text(path, "someone else's");
    age(path, 86400);
  }
  const auto before = files_under(other.path());
  GcOptions options;
  options.max_size = 1 << 20;
  for (const char* linked : {"locks", "stats"}) {
    fs::create_symlink(other / linked, dir / linked);
    auto report = collect_garbage(disk, options);
    ASSERT_FALSE(report.ok()) << linked;
    EXPECT_NE(report.error().message.find((dir / linked).string() + " is a symbolic link"),
              std::string::npos)
        << report.error().message;
    EXPECT_FALSE(trim_group(disk, 0xa, options).ok()) << linked;
    fs::remove(dir / linked);
  }

  // Linked shard folders under real locks/ and entries/ are not walked.
  fs::create_directories(dir / "locks");
  fs::create_symlink(other / "shard", dir / "locks/ab");
  fs::create_symlink(other / "entries", dir / "entries/cd");
  auto report = collect_garbage(disk, options);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->locks_removed, 0u);
  EXPECT_EQ(report->temp_removed, 0u);
  EXPECT_EQ(files_under(other.path()), before);
  for (const fs::path& path : victims) EXPECT_EQ(read_text(path), "someone else's") << path;
}

// Links, FIFOs and the like at entry paths are removed (never their targets); a folder stays.
TEST(CollectGarbage, RemovesNonRegularFilesAtEntryPaths) {
  TempDir dir("gc");
  DiskTier disk(dir.path());
  const Key real = key_with(0x10, 1);
  ASSERT_TRUE(disk.put(real, "entry").ok());
  const Key fifo = key_with(0x10, 2);
  const Key link = key_with(0x10, 3);
  const Key folder = key_with(0x10, 4);
  ASSERT_EQ(::mkfifo(disk.path_of(fifo).c_str(), 0664), 0);
  fs::create_symlink(disk.path_of(real), disk.path_of(link));
  fs::create_directories(disk.path_of(folder));
  GcOptions options;
  options.max_size = 1 << 20;
  auto report = collect_garbage(disk, options);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->non_regular_removed, 2u);
  EXPECT_FALSE(fs::exists(fs::symlink_status(disk.path_of(fifo))));
  EXPECT_FALSE(fs::exists(fs::symlink_status(disk.path_of(link))));
  EXPECT_TRUE(fs::is_directory(disk.path_of(folder)));
  EXPECT_TRUE(fs::exists(disk.path_of(real)));
  EXPECT_EQ(report->entries, 1u);
}

TEST(CollectGarbage, FreshTempFilesAreLeftForTheirWriter) {
  TempDir dir("gc");
  DiskTier disk(dir.path());
  const Key key = key_with(0x10, 1);
  ASSERT_TRUE(disk.put(key, "entry").ok());
  const fs::path temp = fs::path(disk.path_of(key).string() + ".tmp.1.0123456789abcdef");
  write_text(temp, "just created, flock not yet taken");
  GcOptions options;
  options.temp_min_age = std::chrono::seconds(60);
  auto report = collect_garbage(disk, options);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->temp_removed, 0u);
  EXPECT_TRUE(fs::exists(temp));
}

TEST(CollectGarbage, AnotherCollectorMakesANonWaitingRunSkip) {
  TempDir dir("gc");
  DiskTier disk(dir.path());
  auto held = FileLock::try_acquire(dir / "locks/gc.lock");
  ASSERT_TRUE(held.ok() && held->has_value());
  GcOptions options;
  options.wait_for_lock = false;
  auto report = collect_garbage(disk, options);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->skipped);
  auto trimmed = trim_group(disk, 3, options);
  ASSERT_TRUE(trimmed.ok());
  EXPECT_TRUE(trimmed->skipped);
}

TEST(TrimGroup, TrimsOnlyItsGroupToItsShareByRecency) {
  TempDir dir("gc");
  DiskTier disk(dir.path());
  // Group 0xa: four entries of 100 bytes, ages 0..3 hours. Group 0x5: one entry.
  for (std::uint8_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(
        disk.put(key_with(static_cast<std::uint8_t>(0xa0 + i), i), std::string(100, 'a')).ok());
    age(disk.path_of(key_with(static_cast<std::uint8_t>(0xa0 + i), i)), i * 3600);
  }
  ASSERT_TRUE(disk.put(key_with(0x50, 9), std::string(100, 'b')).ok());
  age(disk.path_of(key_with(0x50, 9)), 10 * 3600);
  ASSERT_TRUE(StoreStats(dir.path()).add({{"store_bytes", 500}, {"store_entries", 5}}).ok());
  GcOptions options;
  options.max_size = 16 * 250;  // the group's share: 250 bytes (target ratio 1)
  options.target_ratio = 1.0;
  auto report = trim_group(disk, 0xa, options);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->entries_before, 4u);
  EXPECT_EQ(report->evicted, 2u);
  const auto keys = keys_in(disk);
  EXPECT_TRUE(keys.contains(key_with(0xa0, 0).hex()));
  EXPECT_TRUE(keys.contains(key_with(0xa1, 1).hex()));
  EXPECT_TRUE(keys.contains(key_with(0x50, 9).hex()));  // older, but another group
  EXPECT_EQ(keys.size(), 3u);
  auto counters = StoreStats(dir.path()).read();
  ASSERT_TRUE(counters.ok());
  EXPECT_EQ((*counters)["store_bytes"], 300);
  EXPECT_EQ((*counters)["evictions"], 2);
}

TEST(DiskRecency, AHitRefreshesAStaleMtimeOnly) {
  TempDir dir("gc");
  DiskTier disk(dir.path(), std::chrono::seconds(600));
  const Key stale = key_with(1, 1);
  const Key fresh = key_with(2, 2);
  ASSERT_TRUE(disk.put(stale, "s").ok());
  ASSERT_TRUE(disk.put(fresh, "f").ok());
  age(disk.path_of(stale), 3600);
  age(disk.path_of(fresh), 60);
  auto mtime = [&](const Key& key) {
    struct stat info {};
    EXPECT_EQ(::stat(disk.path_of(key).c_str(), &info), 0);
    return info.st_mtim.tv_sec;
  };
  const auto fresh_before = mtime(fresh);
  ASSERT_TRUE(disk.get(stale).ok());
  ASSERT_TRUE(disk.get(fresh).ok());
  EXPECT_GT(mtime(stale), std::time(nullptr) - 60);
  EXPECT_EQ(mtime(fresh), fresh_before);
  // peek (admin reads) never refreshes.
  age(disk.path_of(stale), 3600);
  const auto stale_before = mtime(stale);
  ASSERT_TRUE(disk.peek(stale).ok());
  EXPECT_EQ(mtime(stale), stale_before);
}

}  // namespace
}  // namespace cubby
