// Cross-process locks on files in a store, built on flock(2).
//
// A lock is a file (created mode 0664 with its folders 02775, so a group can share the store)
// holding the owner's pid, host name and start time for humans; the content is never trusted
// for correctness. flock locks are released by the kernel when their owner dies (kill -9
// included), so a stale lock never blocks anyone. The owner unlinks the file before releasing
// it; an acquirer that wins the lock on a file that was unlinked meanwhile (its inode is no longer
// the one at the path) retries, so two processes never hold "the same" lock through two inodes.
// A lock ends with the process that took it, also when it forked: flock belongs to the open file,
// which a forked child shares, so the lock's fd is closed in every child at fork (pthread_atfork)
// and a child's copy of a FileLock neither holds nor releases it (nor unlinks the file): a child
// that outlives its parent never keeps a claim or a compile lock from waiters. (Exec'd children
// never had it: the fd is O_CLOEXEC.)
// On NFS, flock is emulated with byte-range locks (Linux >= 2.6.12): it works across hosts as
// long as the server supports NFSv4 locking.
// Heartbeat: a process that holds locks touches their files (mtime) every kLockHeartbeat from a
// thread of its own. A process that is stopped without dying (SIGSTOP, a debugger, a frozen VM)
// keeps its flock but stops touching: a waiter that asks for `stale_after` gives up on a lock
// whose file has not changed for that long, and produces what it waited for itself. Lock files
// of processes without the heartbeat (an older cubby) look stopped after `stale_after`: the
// waiter duplicates their work, never anything wrong. On NFS a client may see another host's
// touch late (attribute caching): at worst the same duplicate work.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string_view>

#include "cubby/error.hpp"

namespace cubby {

// How often a holder touches its lock files (see above).
inline constexpr std::chrono::milliseconds kLockHeartbeat{1000};

// How a wait for a lock ended: `lock` when taken; else `holder_stopped` when the holder's heartbeat
// stopped for `stale_after` (false: the wait's timeout expired).
struct LockWait;

class FileLock {
 public:
  FileLock() = default;
  ~FileLock();
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // Takes the lock at `path` if no one holds it; nullopt if someone does. Errc::io if the file
  // cannot be created (read-only store, permissions).
  static Result<std::optional<FileLock>> try_acquire(const std::filesystem::path& path);

  // Waits up to `timeout` for the lock at `path`; nullopt if the wait expired. Errc::io as above.
  static Result<std::optional<FileLock>> acquire(const std::filesystem::path& path,
                                                 std::chrono::milliseconds timeout);

  // acquire, and also gives up once the holder's lock file has not changed for `stale_after`
  // (measured on this process's steady clock from the first time it saw the file's current
  // inode and mtime: no clock of another host is compared). Requires stale_after > 0.
  static Result<LockWait> acquire_from_live(const std::filesystem::path& path,
                                            std::chrono::milliseconds timeout,
                                            std::chrono::milliseconds stale_after);

  // True in the process that took the lock until release(); false in a forked child.
  bool held() const;
  const std::filesystem::path& path() const { return path_; }

  // Unlinks the lock file and releases the lock. Idempotent; the destructor calls it.
  void release();

 private:
  FileLock(std::filesystem::path path, int fd);
  class HolderWatch;
  // acquire and acquire_from_live (stale_after 0: no heartbeat check).
  static Result<LockWait> wait_for_lock(const std::filesystem::path& path,
                                        std::chrono::milliseconds timeout,
                                        std::chrono::milliseconds stale_after);

  std::filesystem::path path_;
  int fd_ = -1;
  long owner_ = 0;  // the pid that took it
};

struct LockWait {
  std::optional<FileLock> lock;
  bool holder_stopped = false;
};

// Removes the file at `path` if it is a regular file last modified at least `min_age` ago and no
// one holds a flock on it (its owner finished or died); false if it is held, younger, gone, or
// not a regular file (a link is never followed nor removed, a FIFO never blocks). Used by `gc`
// for lock files and the temp files of writers, which hold a flock on their temp file while
// they write it.
bool remove_if_unlocked(const std::filesystem::path& path,
                        std::chrono::seconds min_age = std::chrono::seconds(0));

// remove_if_unlocked for the file `name` in the open folder `folder_fd` (openat / fstatat /
// unlinkat: a link or rename among the parents cannot redirect it elsewhere).
bool remove_if_unlocked_at(int folder_fd, std::string_view name,
                           std::chrono::seconds min_age = std::chrono::seconds(0));

}  // namespace cubby
