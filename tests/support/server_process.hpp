// Starting a test server (redis-server, nginx): one process start and readiness wait for the
// servers the remote-tier tests run against.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "util/spawn.hpp"

namespace cubby::testing {

// Starts `argv` (argv[0]: the executable) in this process's environment with its stdout and
// stderr on /dev/null, then waits up to 10 s until `ready()` says it serves. The server's pid;
// -1 when it cannot start, ends before it is ready (a port taken meanwhile?), or is not ready in
// time (then it is killed and reaped).
inline pid_t start_server(const std::vector<std::string>& argv,
                          const std::function<bool()>& ready) {
  SpawnRequest request;
  request.program = argv.front();
  request.argv = argv;
  request.env = child_environment();
  request.fds = {ChildFd::open(1, "/dev/null", O_WRONLY), ChildFd::open(2, "/dev/null", O_WRONLY)};
  const auto started = spawn(request);
  if (!started) return -1;
  const pid_t pid = *started;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return -1;
    if (ready()) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return -1;
}

}  // namespace cubby::testing
