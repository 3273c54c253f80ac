// Cross-process file locks (flock); contract in storage/local/lock.hpp.
#include "storage/local/lock.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>

#include "util/io.hpp"

namespace cubby {
namespace {

constexpr mode_t kLockMode = 0664;

// The fds of the lock files this process has open (`fds`: closed in a child at fork, see the
// header) and, of those, the ones it holds the lock of (`locked`: touched by the heartbeat). The
// mutex is held across fork() so the child finds the sets whole. Never destroyed (a lock may be
// released by a static destructor, the heartbeat runs until the process ends).
struct HeldLocks {
  std::mutex mutex;
  std::set<int> fds;
  std::set<int> locked;
  pid_t heartbeat_of = 0;  // the process whose heartbeat thread runs (0: none; a child has none)
};
HeldLocks& held_locks() {
  static auto* held = new HeldLocks;  // NOLINT(cppcoreguidelines-owning-memory): never freed
  return *held;
}

void at_fork_close_held_in_child() {
  static std::once_flag once;
  std::call_once(once, [] {
    ::pthread_atfork([] { held_locks().mutex.lock(); }, [] { held_locks().mutex.unlock(); },
                     [] {
                       HeldLocks& held = held_locks();
                       for (const int fd : held.fds) ::close(fd);
                       held.fds.clear();
                       held.locked.clear();
                       held.mutex.unlock();
                     });
  });
}

// Closes `fd` (a lock file's) and forgets it.
void close_held(int fd) {
  const std::lock_guard lock(held_locks().mutex);
  held_locks().fds.erase(fd);
  held_locks().locked.erase(fd);
  ::close(fd);
}

// Touches every lock file the process holds, every kLockHeartbeat, until the process ends.
[[noreturn]] void heartbeat() {
  for (;;) {
    std::this_thread::sleep_for(kLockHeartbeat);
    const std::lock_guard lock(held_locks().mutex);
    for (const int fd : held_locks().locked) (void)::futimens(fd, nullptr);
  }
}

// Marks `fd` as a lock this process holds, starting the process's heartbeat at its first lock.
// A process that cannot start a thread holds its locks without one: waiters then take it for
// stopped after their stale_after and duplicate its work.
void note_locked(int fd) {
  const std::lock_guard lock(held_locks().mutex);
  HeldLocks& held = held_locks();
  held.locked.insert(fd);
  if (held.heartbeat_of == ::getpid()) return;
  try {
    std::thread(heartbeat).detach();
    held.heartbeat_of = ::getpid();
  } catch (const std::system_error&) {  // out of threads: see above
  }
}

// Opens (creating if needed) the lock file; -1 with errno set on failure. Never through a link
// (ELOOP) and never anything but a regular file (EINVAL): a planted link's target is not
// truncated by describe_owner, a FIFO does not block.
int open_lock_file(const std::filesystem::path& path) {
  constexpr int kFlags = O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  int fd = ::open(path.c_str(), kFlags, kLockMode);
  if (fd < 0 && errno == ENOENT) {
    if (!io::make_folders(path.parent_path())) return -1;
    fd = ::open(path.c_str(), kFlags, kLockMode);
  }
  struct stat info {};
  if (fd >= 0 && (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode))) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

// What to do is said for the callers that take locks (compile, stats, `gc`, `verify --fix`):
// all of them need a writable store, so CUBBY_READ_ONLY (which `gc` refuses) is not advised.
Failure lock_failure(const std::filesystem::path& path, int error) {
  const char* advice =
      error == EROFS
          ? " (the store's file system is read-only: remount it read-write, or run this where "
            "the store is writable)"
          : " (the store needs to be writable: fix its permissions, mode 02775, or run this as "
            "a user of the store's group)";
  return fail(Errc::io, "cannot create the lock file ", path.string(), ": ", std::strerror(error),
              advice);
}

// True if `fd` (locked) is still the file at `path`: not unlinked by a previous owner.
bool still_linked(int fd, const std::filesystem::path& path) {
  struct stat held {};
  struct stat named {};
  if (::fstat(fd, &held) != 0 || ::stat(path.c_str(), &named) != 0) return false;
  return held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

// Writes the owner's identity into the lock file (for humans; never parsed for correctness).
void describe_owner(int fd) {
  char host[256] = "?";
  (void)::gethostname(host, sizeof host - 1);
  char text[400];
  const int length = std::snprintf(text, sizeof text, "pid %ld host %s since %lld\n",
                                   static_cast<long>(::getpid()), host,
                                   static_cast<long long>(std::time(nullptr)));
  if (length > 0 && ::ftruncate(fd, 0) == 0) {
    (void)!::pwrite(fd, text, static_cast<std::size_t>(std::min(length, 399)), 0);
  }
  (void)::fchmod(fd, kLockMode);
}

// open_lock_file, the fd registered in held_locks() before any fork can copy it: from its open
// (a child that shares the open file would share a flock taken on it later) to close_held.
int open_held_lock_file(const std::filesystem::path& path) {
  at_fork_close_held_in_child();
  const std::lock_guard lock(held_locks().mutex);
  const int fd = open_lock_file(path);
  if (fd >= 0) held_locks().fds.insert(fd);
  return fd;
}

// One attempt: 1 locked (fd returned through `out`), 0 held by someone else, -1 error (errno).
int attempt(const std::filesystem::path& path, int& out) {
  for (;;) {
    const int fd = open_held_lock_file(path);
    if (fd < 0) return -1;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      close_held(fd);
      if (error == EWOULDBLOCK || error == EINTR) return 0;
      errno = error;
      return -1;
    }
    if (still_linked(fd, path)) {
      describe_owner(fd);
      note_locked(fd);
      out = fd;
      return 1;
    }
    close_held(fd);  // the previous owner unlinked it while we waited: take the new file
  }
}

}  // namespace

// What a waiter saw of a held lock file: its inode and mtime, and since when (the waiter's steady
// clock) it has seen them unchanged.
class FileLock::HolderWatch {
 public:
  // How long the file at `path` has kept the inode and mtime last seen; zero when they changed
  // (a heartbeat, a new holder) or the file cannot be read (just released).
  std::chrono::steady_clock::duration unchanged_for(const std::filesystem::path& path,
                                                    std::chrono::steady_clock::time_point now) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) {
      seen_ = false;
      return {};
    }
    if (!seen_ || info.st_ino != inode_ || info.st_mtim.tv_sec != mtime_.tv_sec ||
        info.st_mtim.tv_nsec != mtime_.tv_nsec) {
      seen_ = true;
      inode_ = info.st_ino;
      mtime_ = info.st_mtim;
      since_ = now;
      return {};
    }
    return now - since_;
  }

 private:
  bool seen_ = false;
  ino_t inode_ = 0;
  struct timespec mtime_ {};
  std::chrono::steady_clock::time_point since_;
};

FileLock::~FileLock() { release(); }

FileLock::FileLock(std::filesystem::path path, int fd)
    : path_(std::move(path)), fd_(fd), owner_(static_cast<long>(::getpid())) {}

FileLock::FileLock(FileLock&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), owner_(other.owner_) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    owner_ = other.owner_;
  }
  return *this;
}

bool FileLock::held() const { return fd_ >= 0 && owner_ == static_cast<long>(::getpid()); }

void FileLock::release() {
  if (fd_ < 0) return;
  if (owner_ != static_cast<long>(::getpid())) {  // a forked child's copy: closed at the fork
    fd_ = -1;
    return;
  }
  ::unlink(path_.c_str());  // while still holding the lock: see the header's contract
  close_held(fd_);
  fd_ = -1;
}

Result<std::optional<FileLock>> FileLock::try_acquire(const std::filesystem::path& path) {
  int fd = -1;
  const int got = attempt(path, fd);
  if (got < 0) return lock_failure(path, errno);
  if (got == 0) return std::optional<FileLock>();
  return std::optional<FileLock>(FileLock(path, fd));
}

Result<std::optional<FileLock>> FileLock::acquire(const std::filesystem::path& path,
                                                  std::chrono::milliseconds timeout) {
  auto waited = wait_for_lock(path, timeout, std::chrono::milliseconds(0));
  if (!waited) return std::move(waited).error();
  return std::move(waited->lock);
}

Result<LockWait> FileLock::acquire_from_live(const std::filesystem::path& path,
                                             std::chrono::milliseconds timeout,
                                             std::chrono::milliseconds stale_after) {
  return wait_for_lock(path, timeout, stale_after);
}

Result<LockWait> FileLock::wait_for_lock(const std::filesystem::path& path,
                                         std::chrono::milliseconds timeout,
                                         std::chrono::milliseconds stale_after) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::microseconds(500);
  HolderWatch watch;
  for (;;) {
    auto got = try_acquire(path);
    if (!got) return std::move(got).error();
    if (got->has_value()) return LockWait{std::move(*got), false};
    const auto now = Clock::now();
    if (stale_after.count() > 0 && watch.unchanged_for(path, now) >= stale_after) {
      return LockWait{std::nullopt, true};
    }
    if (now >= deadline) return LockWait{};
    // Polling (not a blocking flock) keeps the wait bounded; the back-off caps at 20 ms.
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(20));
  }
}

namespace {

// Whether `file` was last modified at least `min_age` ago. time(2) reads the coarse clock, which
// lags the fine-grained timestamps Linux (6.13+, multigrain) gives a file whose times were just
// read: a file written this instant can look up to a tick in the future. So: no age asked, no
// clock read; otherwise CLOCK_REALTIME in nanoseconds, which never lags a file's stamp.
bool old_enough(const struct stat& file, std::chrono::seconds min_age) {
  if (min_age.count() <= 0) return true;
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const auto ns = [](const struct timespec& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
  };
  return ns(now) - ns(file.st_mtim) >= static_cast<std::int64_t>(min_age.count()) * 1000000000;
}

}  // namespace

bool remove_if_unlocked_at(int folder_fd, std::string_view name, std::chrono::seconds min_age) {
  const std::string file(name);
  const int fd =
      ::openat(folder_fd, file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return false;
  bool removed = false;
  struct stat held {};
  struct stat named {};
  if (::fstat(fd, &held) == 0 && S_ISREG(held.st_mode) && old_enough(held, min_age) &&
      ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
      ::fstatat(folder_fd, file.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
      held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
    removed = ::unlinkat(folder_fd, file.c_str(), 0) == 0;
  }
  ::close(fd);
  return removed;
}

bool remove_if_unlocked(const std::filesystem::path& path, std::chrono::seconds min_age) {
  return remove_if_unlocked_at(AT_FDCWD, path.string(), min_age);
}

}  // namespace cubby
