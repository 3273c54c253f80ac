// Cross-process file locks (core/src/storage/local/lock.cpp): exclusion across processes, release
// on death (kill -9), bounded waits, garbage lock files, leftover removal.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <thread>

#include "forked_owner.hpp"
#include "storage/local/lock.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using namespace std::chrono_literals;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

// A child holding the lock at `path` (forked_owner.hpp), sleeping for `hold`.
pid_t hold_in_child(const std::filesystem::path& path, std::chrono::milliseconds hold) {
  const pid_t pid = testing::hold_lock_in_child(path, hold);
  EXPECT_GT(pid, 0) << "the child could not take " << path;
  return pid;
}

int reap(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// A lock held through a forked child outlived its owner: the child shared the open file (and so
// the flock), and waiters waited their whole bound (5 min for a compile lock, 120 s for a CuPy
// claim). The owner takes the lock, forks a child that sleeps, and dies: the lock is free at once.
TEST(FileLock, ALockEndsWithItsOwnerEvenWhenAForkedChildOutlivesIt) {
  TempDir dir("lock");
  const auto path = dir / "locks/ab/key.lock";
  std::optional<FileLock> lock;
  const testing::OrphanedChild child(
      [&] {
        auto taken = FileLock::try_acquire(path);
        if (taken && taken->has_value()) lock = std::move(**taken);
        return lock.has_value();
      },
      [&] {
        // The child's copy neither holds nor releases the lock, nor unlinks the owner's file.
        const bool held = lock->held();
        lock->release();
        return !held && std::filesystem::exists(path);
      });
  ASSERT_TRUE(child.ok());
  EXPECT_TRUE(std::filesystem::exists(path));  // the owner died without unlinking it
  auto taken = FileLock::try_acquire(path);    // at once: no wait at all
  ASSERT_TRUE(taken.ok()) << taken.error().message;
  EXPECT_TRUE(taken->has_value()) << "the lock outlived its owner in its forked child";
}

TEST(FileLock, ExcludesAnotherProcessAndIsRemovedOnRelease) {
  TempDir dir("lock");
  const auto path = dir / "locks/ab/key.lock";
  const pid_t child = hold_in_child(path, 60s);
  auto busy = FileLock::try_acquire(path);
  ASSERT_TRUE(busy.ok()) << busy.error().message;
  EXPECT_FALSE(busy->has_value());
  // The owner's identity is in the file, for humans.
  EXPECT_NE(read_text(path).find("pid " + std::to_string(child)), std::string::npos);
  ::kill(child, SIGKILL);  // a dead owner's lock is free at once: flock dies with its process
  reap(child);
  auto taken = FileLock::acquire(path, 5s);
  ASSERT_TRUE(taken.ok()) << taken.error().message;
  ASSERT_TRUE(taken->has_value());
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0664u);
  (*taken)->release();
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(FileLock, WaitsForAnOwnerThatFinishes) {
  TempDir dir("lock");
  const auto path = dir / "k.lock";
  const pid_t child = hold_in_child(path, 300ms);
  auto taken = FileLock::acquire(path, 30s);
  ASSERT_TRUE(taken.ok());
  EXPECT_TRUE(taken->has_value());
  EXPECT_EQ(reap(child), 0);
}

TEST(FileLock, BoundedWaitExpiresWhileTheOwnerHangs) {
  TempDir dir("lock");
  const auto path = dir / "k.lock";
  const pid_t child = hold_in_child(path, 60s);
  auto waited = FileLock::acquire(path, 100ms);
  ASSERT_TRUE(waited.ok());
  EXPECT_FALSE(waited->has_value());
  ::kill(child, SIGKILL);
  reap(child);
}

// A holder that is stopped without dying (SIGSTOP, a debugger, a frozen VM) keeps its flock:
// before the heartbeat, a compile waiter waited its whole bound (5 minutes). Its heartbeat ends
// with it, so a waiter that asks for stale_after gives up within about that long.
TEST(FileLock, AWaiterGivesUpOnAStoppedHolderOnceItsHeartbeatEnds) {
  TempDir dir("lock");
  const auto path = dir / "k.lock";
  const pid_t child = hold_in_child(path, 60s);
  std::this_thread::sleep_for(2 * kLockHeartbeat);  // beating: its file's mtime moves
  ASSERT_EQ(::kill(child, SIGSTOP), 0);
  const auto start = std::chrono::steady_clock::now();
  auto waited = FileLock::acquire_from_live(path, 60s, 2s);
  const auto took = std::chrono::steady_clock::now() - start;
  ::kill(child, SIGKILL);
  reap(child);
  ASSERT_TRUE(waited.ok()) << waited.error().message;
  EXPECT_FALSE(waited->lock.has_value());
  EXPECT_TRUE(waited->holder_stopped);
  EXPECT_GE(took, 2s);
  EXPECT_LT(took, 10s) << "the waiter did not see the stopped holder";
}

// A live holder's heartbeat keeps its lock fresh: the waiter waits for it up to its timeout, and
// does not take it for stopped however long stale_after's multiple of the beat it waits.
TEST(FileLock, ALiveHoldersHeartbeatKeepsItsWaitersWaiting) {
  TempDir dir("lock");
  const auto path = dir / "k.lock";
  const pid_t child = hold_in_child(path, 60s);
  auto waited = FileLock::acquire_from_live(path, 6s, 3 * kLockHeartbeat);
  ::kill(child, SIGKILL);
  reap(child);
  ASSERT_TRUE(waited.ok()) << waited.error().message;
  EXPECT_FALSE(waited->lock.has_value());
  EXPECT_FALSE(waited->holder_stopped) << "a live holder was taken for stopped";
}

TEST(FileLock, AcquireFromLiveTakesAFreeLockAtOnce) {
  TempDir dir("lock");
  auto waited = FileLock::acquire_from_live(dir / "k.lock", 5s, 2s);
  ASSERT_TRUE(waited.ok()) << waited.error().message;
  EXPECT_TRUE(waited->lock.has_value());
  EXPECT_FALSE(waited->holder_stopped);
}

TEST(FileLock, GarbageInALockFileIsHarmless) {
  TempDir dir("lock");
  const auto path = dir / "k.lock";
  write_text(path, std::string("\xff\x00garbage", 9));
  auto taken = FileLock::try_acquire(path);
  ASSERT_TRUE(taken.ok());
  ASSERT_TRUE(taken->has_value());
  EXPECT_EQ(read_text(path).rfind("pid ", 0), 0u);
}

TEST(FileLock, MovedLockIsHeldOnceAndReleasedOnce) {
  TempDir dir("lock");
  const auto path = dir / "k.lock";
  auto first = FileLock::try_acquire(path);
  ASSERT_TRUE(first.ok() && first->has_value());
  FileLock moved = std::move(**first);
  EXPECT_FALSE((*first)->held());
  EXPECT_TRUE(moved.held());
  auto again = FileLock::try_acquire(path);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value());  // another open file description in this process conflicts
  moved.release();
  moved.release();
  auto after = FileLock::try_acquire(path);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->has_value());
}

TEST(FileLock, UnwritableFolderIsAnIoFailureWithAdvice) {
  TempDir dir("lock");
  write_text(dir / "file", "x");
  auto taken = FileLock::try_acquire(dir / "file" / "k.lock");  // a file where a folder must be
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().code, Errc::io);
  EXPECT_NE(taken.error().message.find("writable"), std::string::npos) << taken.error().message;
}

// Lock names are predictable: a link planted at one is refused, and its target (which the owner
// record would otherwise truncate and overwrite) is left alone; so is a FIFO's open.
TEST(FileLock, NeverTakesALockThroughAPlantedLinkOrFifo) {
  TempDir dir("lock");
  write_text(dir / "victim", "precious");
  std::filesystem::create_symlink(dir / "victim", dir / "k.lock");
  auto taken = FileLock::try_acquire(dir / "k.lock");
  EXPECT_FALSE(taken.ok());
  EXPECT_EQ(read_text(dir / "victim"), "precious");
  ASSERT_EQ(::mkfifo((dir / "f.lock").c_str(), 0664), 0);
  EXPECT_FALSE(FileLock::try_acquire(dir / "f.lock").ok());
  EXPECT_FALSE(remove_if_unlocked(dir / "k.lock"));  // a link is never removed through
  EXPECT_FALSE(remove_if_unlocked(dir / "f.lock"));  // nor a FIFO (and it never blocks)
  EXPECT_EQ(read_text(dir / "victim"), "precious");
}

TEST(RemoveIfUnlocked, RemovesOnlyFilesNoOneHolds) {
  TempDir dir("lock");
  const auto held = dir / "held.lock";
  const auto free = dir / "free.lock";
  const pid_t child = hold_in_child(held, 60s);
  write_text(free, "left by a dead process");
  EXPECT_FALSE(remove_if_unlocked(held));
  EXPECT_TRUE(std::filesystem::exists(held));
  EXPECT_TRUE(remove_if_unlocked(free));
  EXPECT_FALSE(std::filesystem::exists(free));
  EXPECT_FALSE(remove_if_unlocked(dir / "missing.lock"));
  ::kill(child, SIGKILL);
  reap(child);
  EXPECT_TRUE(remove_if_unlocked(held));
}

// A file written this instant is old enough for "no age asked" and young for any age asked,
// whatever the clocks: Linux's fine-grained file stamps (6.13+, once a file's times were read)
// can be a tick ahead of time(2)'s coarse clock, which once kept gc from removing a dead lock.
TEST(RemoveIfUnlocked, AFileJustWrittenIsRemovedWhenNoAgeIsAskedAndKeptWhenOneIs) {
  TempDir dir("lock");
  const auto path = dir / "just.lock";
  for (int round = 0; round < 2000; ++round) {
    write_text(path, "a");
    struct stat seen {};
    ASSERT_EQ(::stat(path.c_str(), &seen), 0);  // asks for a fine-grained stamp next
    write_text(path, "ab");
    ASSERT_FALSE(remove_if_unlocked(path, 1s)) << "round " << round;
    ASSERT_TRUE(remove_if_unlocked(path)) << "round " << round;
  }
}
}  // namespace
}  // namespace cubby
