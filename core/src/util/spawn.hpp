// Starting child processes: the one posix_spawn set-up of prefetch, `cubby warm`'s worker pool, the
// benchmarks' process runner and the tests' CLI runner. A request says the program, its arguments,
// its whole environment and what each descriptor of the child is; nothing else is implied.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cubby/error.hpp"

namespace cubby {

// What descriptor `fd` of the child is before its program starts: a copy of descriptor `from` of
// this process (dup2; `from` may be a descriptor set up by an earlier ChildFd, `dup(2, 1)` sends
// stdout where stderr goes), or `path` opened with `flags` (files it creates get mode 0644 less
// the umask). Applied in the order given.
struct ChildFd {
  int fd = -1;
  int from = -1;  // >= 0: dup2(from, fd); -1: open `path`
  std::string path;
  int flags = 0;

  static ChildFd dup(int from, int fd) { return {fd, from, {}, 0}; }
  static ChildFd open(int fd, std::string path, int flags) {
    return {fd, -1, std::move(path), flags};
  }
};

struct SpawnRequest {
  // What runs: a path, or a name without '/' looked up on the child environment's PATH.
  std::filesystem::path program;
  // The whole argv, argv[0] included; empty: { program }.
  std::vector<std::string> argv;
  // The whole environment of the child ("NAME=value" items; child_environment builds one).
  std::vector<std::string> env;
  // The child's descriptors beyond what it inherits (every descriptor of this process that is
  // not O_CLOEXEC), in order.
  std::vector<ChildFd> fds;
};

// This process's environment less every item that starts with one of `drop` ("CUBBY_" drops every
// CUBBY_ variable, "CUBBY_DIR=" that one) and less every variable `set` gives a value to, then
// `set`'s "NAME=value" items in their order.
std::vector<std::string> child_environment(const std::vector<std::string>& set = {},
                                           const std::vector<std::string>& drop = {});

// Starts `request` (posix_spawn; posix_spawnp for a program name without '/'): the child's pid.
// A program that does not exist or cannot be executed, or a descriptor that cannot be set up, is
// Errc::not_found (ENOENT) or Errc::io: "cannot start <program>: <strerror>", and no child is left.
Result<pid_t> spawn(const SpawnRequest& request);

// Waits for child `pid` to end (EINTR retried): its exit status, 128 + the signal's number when a
// signal ended it, -1 when `pid` is not a child of this process that can be waited for.
int wait_exit_code(pid_t pid);

}  // namespace cubby
