// Processes that hold locks for tests: an owner that takes a lock or a claim, forks a child that
// outlives it, and dies without releasing anything (what a test of "a claim ends with the process
// that made it" starts from); and a child that holds a lock file until it is killed (a compiler
// that is busy, hung or stopped).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "storage/local/lock.hpp"

namespace cubby::testing {

// The sleeping child of an owner that died: killed when this ends.
class OrphanedChild {
 public:
  // Forks the owner, which runs `take` (true: it took its lock or claim), then forks a child that
  // runs `in_child` (true: the child's copy behaved) and sleeps for a minute, and exits at once.
  // ok() when all of that happened: the owner is dead and reaped, its child alive.
  OrphanedChild(const std::function<bool()>& take, const std::function<bool()>& in_child) {
    int report[2];
    if (::pipe(report) != 0) return;
    const pid_t owner = ::fork();
    if (owner == 0) {
      ::close(report[0]);
      if (!take()) ::_exit(3);
      if (::fork() == 0) {
        const pid_t self = in_child() ? ::getpid() : 0;
        (void)!::write(report[1], &self, sizeof self);
        std::this_thread::sleep_for(std::chrono::minutes(1));
        ::_exit(0);
      }
      ::_exit(0);  // dies holding what `take` took: no destructor runs
    }
    ::close(report[1]);
    pid_t child = 0;
    const bool reported = owner > 0 && ::read(report[0], &child, sizeof child) == sizeof child;
    ::close(report[0]);
    int status = 0;
    const bool owner_ok = owner > 0 && ::waitpid(owner, &status, 0) == owner && WIFEXITED(status) &&
                          WEXITSTATUS(status) == 0;
    if (reported && child > 0) pid_ = child;
    ok_ = owner_ok && pid_ > 0 && ::kill(pid_, 0) == 0;
  }
  OrphanedChild(const OrphanedChild&) = delete;
  OrphanedChild& operator=(const OrphanedChild&) = delete;
  ~OrphanedChild() {
    if (pid_ > 0) ::kill(pid_, SIGKILL);  // not this process's child: its new parent reaps it
  }

  bool ok() const { return ok_; }

 private:
  pid_t pid_ = 0;
  bool ok_ = false;
};

// Forks a child that takes the lock at `path` (FileLock::try_acquire, so its heartbeat runs),
// then sleeps for `hold` and exits; returns once the child holds it (its pid), or -1 when it
// could not take it. The caller kills and reaps it.
inline pid_t hold_lock_in_child(const std::filesystem::path& path, std::chrono::milliseconds hold) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    auto lock = FileLock::try_acquire(path);
    const char ok = (lock && lock->has_value()) ? '1' : '0';
    (void)!::write(ready[1], &ok, 1);
    std::this_thread::sleep_for(hold);
    ::_exit(0);
  }
  ::close(ready[1]);
  char ok = '0';
  const bool read = ::read(ready[0], &ok, 1) == 1;
  ::close(ready[0]);
  if (read && ok == '1') return pid;
  if (pid > 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  return -1;
}

}  // namespace cubby::testing
