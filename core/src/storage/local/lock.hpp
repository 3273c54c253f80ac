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
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string_view>

#include "cubby/error.hpp"

namespace cubby {

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

  // True in the process that took the lock until release(); false in a forked child.
  bool held() const;
  const std::filesystem::path& path() const { return path_; }

  // Unlinks the lock file and releases the lock. Idempotent; the destructor calls it.
  void release();

 private:
  FileLock(std::filesystem::path path, int fd);

  std::filesystem::path path_;
  int fd_ = -1;
  long owner_ = 0;  // the pid that took it
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
