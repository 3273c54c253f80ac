// Per-process PCH folders in a store (core/src/storage/local/pch_dir.cpp): one per process and
// store under tmp/ with its lock held, removed at exit, left to the parent by a forked child, and
// removed by gc only once their process is gone.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "storage/local/lock.hpp"
#include "storage/local/pch_dir.hpp"
#include "test_support.hpp"
#include "util/io.hpp"

namespace fs = std::filesystem;

namespace cubby {
namespace {

using testing::TempDir;
using testing::write_text;

bool lock_is_held(const fs::path& folder) {
  auto lock = FileLock::try_acquire(folder.string() + ".lock");
  return lock && !lock->has_value();
}

TEST(PchDir, OneFolderPerProcessAndStoreUnderTmpWithItsLockHeldUntilRemoved) {
  TempDir store("pch-store");
  auto dir = PchDir::of_store(store.path());
  ASSERT_NE(dir, nullptr);
  EXPECT_EQ(PchDir::of_store(store.path()), dir);  // shared by the process's Caches
  EXPECT_EQ(dir->path().parent_path(), store.path() / "tmp");
  EXPECT_TRUE(io::is_temp_name_of("pch", dir->path().filename().string()));
  EXPECT_TRUE(fs::is_directory(dir->path()));
  EXPECT_TRUE(lock_is_held(dir->path()));
  write_text(dir->path() / "k_0.pch", "parsed headers");
  const fs::path folder = dir->path();
  dir->remove();
  EXPECT_FALSE(fs::exists(folder));
  EXPECT_FALSE(fs::exists(folder.string() + ".lock"));
  auto again = PchDir::of_store(store.path());  // a later Cache of the process makes a new one
  ASSERT_NE(again, nullptr);
  EXPECT_NE(again->path(), folder);
  again->remove();
}

// A symlink planted at a predictable fingerprint folder (a group-writable store) made NVRTC write
// its .pch into the link's target (issue 23).
TEST(PchDir, FingerprintFoldersArePrivateAndALinkIsNeverFollowed) {
  TempDir store("pch-store");
  auto dir = PchDir::of_store(store.path());
  ASSERT_NE(dir, nullptr);
  struct stat st {};
  ASSERT_EQ(::lstat(dir->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);  // no one else can plant anything in it
  bool made = false;
  const fs::path folder = dir->fingerprint_folder("0123456789abcdef", made);
  EXPECT_TRUE(made);
  EXPECT_EQ(folder, dir->path() / "0123456789abcdef");
  ASSERT_EQ(::lstat(folder.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(dir->fingerprint_folder("0123456789abcdef", made), folder);
  EXPECT_FALSE(made);  // found, not made
  fs::create_directories(store.path() / "victim");
  fs::create_directory_symlink(store.path() / "victim", dir->path() / "fedcba9876543210");
  EXPECT_TRUE(dir->fingerprint_folder("fedcba9876543210", made).empty());
  EXPECT_FALSE(made);
  EXPECT_TRUE(dir->fingerprint_folder("../../victim0000", made).empty());  // not a fingerprint
  write_text(folder / "k.pch", "parsed headers");
  write_text(store.path() / "victim" / "v.pch", "not ours");
  dir->discard("fedcba9876543210");  // a link: nothing followed
  EXPECT_TRUE(fs::exists(store.path() / "victim" / "v.pch"));
  dir->discard("0123456789abcdef");
  EXPECT_FALSE(fs::exists(folder / "k.pch"));
  dir->remove();
}

TEST(PchDir, AReadOnlyStoreHasNone) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes through a read-only mode";
  TempDir store("pch-store");
  fs::permissions(store.path(), fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_EQ(PchDir::of_store(store.path()), nullptr);
  fs::permissions(store.path(), fs::perms::owner_all);
}

TEST(PchDir, AForkedChildLeavesTheParentsFolderAndLock) {
  TempDir store("pch-store");
  auto dir = PchDir::of_store(store.path());
  ASSERT_NE(dir, nullptr);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto own = PchDir::of_store(store.path());  // the child's own folder, not the parent's
    const bool apart = own != nullptr && own->path() != dir->path();
    dir.reset();  // the child's last reference to the parent's folder: its destructor runs
    std::exit(apart ? 0 : 1);  // and the registry's at exit
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(fs::is_directory(dir->path()));
  EXPECT_TRUE(lock_is_held(dir->path()));
  dir->remove();
}

TEST(PchDir, GcRemovesTheFoldersOfFinishedProcessesOnly) {
  TempDir store("pch-store");
  const fs::path tmp = store.path() / "tmp";
  auto live = PchDir::of_store(store.path());
  ASSERT_NE(live, nullptr);
  write_text(live->path() / "live_0.pch", "in use");
  const fs::path dead = tmp / "pch.tmp.999999.0123456789abcdef";
  fs::create_directories(dead);
  write_text(dead / "k_0.pch", std::string(1000, 'p'));
  write_text(dead / "k_1.pch", std::string(24, 'p'));
  const fs::path mixed = tmp / "pch.tmp.999998.0123456789abcdef";  // holds a foreign file
  fs::create_directories(mixed);
  write_text(mixed / "k_0.pch", "pch");
  write_text(mixed / "notes.txt", "not cubby's");
  const fs::path orphan_lock = tmp / "pch.tmp.999997.0123456789abcdef.lock";
  write_text(orphan_lock, "pid 999997");
  const fs::path foreign = tmp / "something_else";
  fs::create_directories(foreign);
  write_text(foreign / "x.pch", "not cubby's");
  fs::create_directory_symlink(foreign, tmp / "pch.tmp.999996.0123456789abcdef");

  const PchCleanup cleanup = remove_dead_pch_dirs(store.path());
  EXPECT_EQ(cleanup.folders, 1u);
  EXPECT_EQ(cleanup.bytes, 1000u + 24u + 3u);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(dead.string() + ".lock"));
  EXPECT_TRUE(fs::exists(mixed / "notes.txt"));  // its *.pch went, the rest stays
  EXPECT_FALSE(fs::exists(mixed / "k_0.pch"));
  EXPECT_FALSE(fs::exists(orphan_lock));
  EXPECT_TRUE(fs::exists(foreign / "x.pch"));            // a link is not followed
  EXPECT_TRUE(fs::exists(live->path() / "live_0.pch"));  // its process lives
  EXPECT_TRUE(lock_is_held(live->path()));
  live->remove();
}

}  // namespace
}  // namespace cubby
