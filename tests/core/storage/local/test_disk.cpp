// Tests for core/src/storage/local/disk.cpp: the disk tier's layout, listing, clearing and
// atomic publication across processes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cubby/entry.hpp"
#include "storage/local/disk.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

Key make_key(std::uint8_t first, std::uint8_t fill) {
  Key key;
  key.bytes.fill(fill);
  key.bytes[0] = first;
  return key;
}

void touch(const fs::path& path, const std::string& text = "foreign") {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::map<std::string, DiskEntryInfo> listed(const DiskTier& tier) {
  std::map<std::string, DiskEntryInfo> out;
  auto result = tier.list([&](const DiskEntryInfo& info) { out[info.key.hex()] = info; });
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  return out;
}

std::vector<std::string> all_files(const fs::path& root) {
  std::vector<std::string> out;
  if (!fs::exists(root)) return out;
  for (const auto& item : fs::recursive_directory_iterator(root)) {
    if (item.is_regular_file()) out.push_back(fs::relative(item.path(), root).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(DiskTier, PathFollowsTheLayout) {
  const DiskTier tier("/store");
  const Key key = make_key(0xab, 0x01);
  EXPECT_EQ(tier.path_of(key),
            fs::path("/store/entries/ab/ab010101010101010101010101010101.entry"));
  EXPECT_EQ(tier.root(), fs::path("/store"));
}

TEST(DiskTier, ConstructionDoesNotTouchTheFilesystem) {
  TempDir dir;
  const DiskTier tier(dir.path() / "store");
  EXPECT_FALSE(fs::exists(dir.path() / "store"));
}

TEST(DiskTier, PutGetRemove) {
  TempDir dir;
  DiskTier tier(dir.path() / "store");
  const Key key = make_key(0x12, 0x34);

  auto missing = tier.get(key);
  ASSERT_TRUE(missing.ok()) << missing.error().message;
  EXPECT_FALSE(missing->has_value());

  const std::string bytes("entry\0bytes", 11);
  ASSERT_TRUE(tier.put(key, bytes).ok());
  EXPECT_TRUE(fs::is_regular_file(tier.path_of(key)));
  auto got = tier.get(key);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, bytes);

  ASSERT_TRUE(tier.put(key, "replaced").ok());
  got = tier.get(key);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, "replaced");

  ASSERT_TRUE(tier.remove(key).ok());
  got = tier.get(key);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_TRUE(tier.remove(key).ok()) << "removing a missing entry is a success";
}

TEST(DiskTier, ReadErrorIsAFailureNotAMiss) {
  TempDir dir;
  DiskTier tier(dir.path() / "store");
  const Key key = make_key(0x55, 0x66);
  fs::create_directories(tier.path_of(key));  // a folder where the entry file should be
  auto got = tier.get(key);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, Errc::corrupt);
  EXPECT_NE(got.error().message.find(tier.path_of(key).string()), std::string::npos);
}

// A FIFO (a get would wait for a writer for ever), a link to /dev/zero (read until memory runs
// out) or a link to another key's entry (served for the wrong key) at an entry path: refused at
// once by get and peek, removed by remove (never its target), replaced by the next put.
TEST(DiskTier, NonRegularFilesAtEntryPathsAreRefusedAtOnce) {
  TempDir dir;
  DiskTier tier(dir.path() / "store");
  const Key real = make_key(0x01, 0x01);
  ASSERT_TRUE(tier.put(real, "the real entry").ok());
  const Key fifo = make_key(0x02, 0x02);
  const Key zero = make_key(0x03, 0x03);
  const Key linked = make_key(0x04, 0x04);
  fs::create_directories(tier.path_of(fifo).parent_path());
  ASSERT_EQ(::mkfifo(tier.path_of(fifo).c_str(), 0664), 0);
  fs::create_directories(tier.path_of(zero).parent_path());
  fs::create_symlink("/dev/zero", tier.path_of(zero));
  fs::create_directories(tier.path_of(linked).parent_path());
  fs::create_symlink(tier.path_of(real), tier.path_of(linked));
  for (const Key& key : {fifo, zero, linked}) {
    auto got = tier.get(key);
    ASSERT_FALSE(got.ok()) << key.hex();
    EXPECT_EQ(got.error().code, Errc::corrupt);
    EXPECT_NE(got.error().message.find("not a regular file"), std::string::npos)
        << got.error().message;
    EXPECT_FALSE(tier.peek(key).ok()) << key.hex();
  }
  ASSERT_TRUE(tier.remove(linked).ok());
  EXPECT_FALSE(fs::is_symlink(tier.path_of(linked)));
  EXPECT_EQ(testing::read_text(tier.path_of(real)), "the real entry");  // the target stays
  ASSERT_TRUE(tier.put(fifo, "written over the FIFO").ok());
  auto got = tier.get(fifo);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, "written over the FIFO");
}

TEST(DiskTier, ListShowsNonRegularEntryFilesOnlyWhenAskedAndNeverWalksLinks) {
  TempDir dir;
  DiskTier tier(dir.path() / "store");
  const Key real = make_key(0x01, 0x01);
  ASSERT_TRUE(tier.put(real, "entry").ok());
  const Key fifo = make_key(0x01, 0x02);
  ASSERT_EQ(::mkfifo(tier.path_of(fifo).c_str(), 0664), 0);
  // A shard folder that is a link to a folder of well-named entries elsewhere: not walked.
  const fs::path elsewhere = dir.path() / "elsewhere";
  const Key outside = make_key(0xcd, 0x01);
  touch(elsewhere / (outside.hex() + ".entry"), "not in the store");
  fs::create_symlink(elsewhere, tier.root() / "entries" / "cd");

  EXPECT_EQ(listed(tier).size(), 1u);
  std::map<std::string, bool> all;
  ASSERT_TRUE(tier.list([&](const DiskEntryInfo& info) { all[info.key.hex()] = info.regular; }, {},
                        NonRegular::include)
                  .ok());
  EXPECT_EQ(all, (std::map<std::string, bool>{{real.hex(), true}, {fifo.hex(), false}}));
  // clear removes the FIFO but not what the linked shard points at.
  auto removed = tier.clear();
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 2u);
  EXPECT_TRUE(fs::exists(elsewhere / (outside.hex() + ".entry")));
}

TEST(DiskTier, ListOfMissingStoreIsEmpty) {
  TempDir dir;
  const DiskTier tier(dir.path() / "nothing-here");
  int calls = 0;
  auto result = tier.list([&](const DiskEntryInfo&) { ++calls; });
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(calls, 0);
}

TEST(DiskTier, ListSkipsForeignAndTempFiles) {
  TempDir dir;
  DiskTier tier(dir.path() / "store");
  const std::vector<Key> keys = {make_key(0x00, 0x11), make_key(0xab, 0x22), make_key(0xab, 0x33)};
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(tier.put(keys[i], std::string(10 * (i + 1), 'x')).ok());
  }
  const fs::path entries = tier.root() / "entries";
  const std::string other = make_key(0xab, 0x44).hex();
  touch(entries / "ab" / (other + ".entry.tmp.123.00000000deadbeef"));  // temp file
  touch(entries / "ab" / "README");                                     // foreign
  touch(entries / "ab" / (other + ".entry.bak"));                       // foreign
  touch(entries / "ab" / (other.substr(0, 31) + ".entry"));             // too short
  touch(entries / "00" / (other + ".entry"));                           // wrong shard
  std::string upper = other;
  for (char& c : upper) c = (c >= 'a' && c <= 'f') ? static_cast<char>(c - 'a' + 'A') : c;
  touch(entries / "AB" / (upper + ".entry"));                 // not lowercase
  touch(entries / "zz" / (std::string(32, 'z') + ".entry"));  // not hex
  touch(entries / (other + ".entry"));                        // outside a shard
  fs::create_directories(entries / "ab" / (make_key(0xab, 0x55).hex() + ".entry"));  // a folder
  touch(tier.root() / "locks" / (other + ".lock"));  // someone else's

  const auto found = listed(tier);
  ASSERT_EQ(found.size(), keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto it = found.find(keys[i].hex());
    ASSERT_NE(it, found.end()) << keys[i].hex();
    EXPECT_EQ(it->second.key, keys[i]);
    EXPECT_EQ(it->second.path, tier.path_of(keys[i]));
    EXPECT_EQ(it->second.bytes, 10 * (i + 1));
    EXPECT_EQ(it->second.modified, fs::last_write_time(tier.path_of(keys[i])));
  }
}

TEST(DiskTier, ClearRemovesEntriesAndTempFilesOnly) {
  TempDir dir;
  DiskTier tier(dir.path() / "store");
  for (std::uint8_t i = 0; i < 5; ++i) ASSERT_TRUE(tier.put(make_key(i, i), "bytes").ok());
  const fs::path entries = tier.root() / "entries";
  const std::string hex = make_key(0x01, 0x01).hex();
  touch(entries / "01" / (hex + ".entry.tmp.42.0123456789abcdef"));
  touch(entries / "01" / "notes.txt");
  touch(tier.root() / "locks" / "x.lock");

  auto removed = tier.clear();
  ASSERT_TRUE(removed.ok()) << removed.error().message;
  EXPECT_EQ(*removed, 6u);
  EXPECT_TRUE(listed(tier).empty());
  EXPECT_EQ(all_files(tier.root()),
            (std::vector<std::string>{"entries/01/notes.txt", "locks/x.lock"}));

  removed = tier.clear();
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 0u);
  EXPECT_TRUE(DiskTier(dir.path() / "absent").clear().ok());
}

// An entry whose payload is `size` copies of one byte derived from `size`, so a reader can tell
// a whole entry from a mix of two.
std::string patterned_entry(const Key& key, std::size_t size) {
  Entry entry;
  entry.lowered_names = {
      {"k<" + std::to_string(size) + ">", "_Z1kIL" + std::to_string(size) + "EEvv"}};
  entry.payload.assign(size, static_cast<char>('A' + size % 26));
  entry.created_ms = static_cast<std::int64_t>(size);
  return encode_entry(key, entry);
}

bool consistent(const Entry& entry) {
  const std::size_t size = entry.payload.size();
  return entry.created_ms == static_cast<std::int64_t>(size) &&
         entry.payload == std::string(size, static_cast<char>('A' + size % 26)) &&
         entry.lowered_names.count("k<" + std::to_string(size) + ">") == 1;
}

// Exit codes of a reader/writer child: 0 success, otherwise what it saw.
enum ChildExit {
  kOk = 0,
  kPutFailed = 20,
  kGetFailed,
  kTorn,
  kInconsistent,
  kListFailed,
  kListedTemp
};

int hammer(const fs::path& root, int child) {
  DiskTier tier(root);
  const std::vector<Key> keys = {make_key(0x10, 1), make_key(0x10, 2), make_key(0x20, 3)};
  for (int i = 0; i < 300; ++i) {
    const Key& key = keys[static_cast<std::size_t>(i + child) % keys.size()];
    const std::size_t size = 1 + static_cast<std::size_t>((child * 7919 + i * 104729) % 150000);
    if (!tier.put(key, patterned_entry(key, size)).ok()) return kPutFailed;
    for (const Key& read_key : keys) {
      auto got = tier.get(read_key);
      if (!got.ok()) return kGetFailed;
      if (!got->has_value()) continue;  // not written yet by anyone
      auto decoded = decode_entry(**got, read_key);
      if (!decoded.ok()) return kTorn;
      if (!consistent(*decoded)) return kInconsistent;
    }
    if (i % 25 == 0) {
      bool saw_temp = false;
      auto result = tier.list([&](const DiskEntryInfo& info) {
        if (info.path.filename().string().find(".tmp.") != std::string::npos) saw_temp = true;
      });
      if (!result.ok()) return kListFailed;
      if (saw_temp) return kListedTemp;
    }
  }
  return kOk;
}

TEST(DiskTier, ConcurrentProcessesNeverSeeATornEntry) {
  TempDir dir;
  const fs::path root = dir.path() / "store";
  constexpr int kChildren = 4;
  std::vector<pid_t> children;
  for (int child = 0; child < kChildren; ++child) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ::_exit(hammer(root, child));
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "child " << pid << " crashed";
    EXPECT_EQ(WEXITSTATUS(status), kOk)
        << "20 put failed, 21 get failed, 22 torn entry, 23 inconsistent entry, "
           "24 list failed, 25 a temp file was listed";
  }
  const auto found = listed(DiskTier(root));
  EXPECT_EQ(found.size(), 3u);
  for (const std::string& file : all_files(root)) {
    EXPECT_EQ(file.find(".tmp."), std::string::npos) << "left behind: " << file;
  }
}

}  // namespace
}  // namespace cubby
