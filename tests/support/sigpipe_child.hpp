// A scenario run in a forked child that keeps SIGPIPE's default action (as C and C++ hosts do), so
// that a write raising SIGPIPE kills the child — a failed test — rather than the test binary.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>

namespace cubby::testing {

// What the child reports about SIGPIPE's disposition in it: "" when it is the default action and
// not blocked, else what it is.
inline std::string sigpipe_not_default() {
  struct sigaction action {};
  sigset_t blocked;
  if (::sigaction(SIGPIPE, nullptr, &action) != 0 || action.sa_handler != SIG_DFL) {
    return "SIGPIPE's action is not the default";
  }
  if (::pthread_sigmask(SIG_BLOCK, nullptr, &blocked) != 0 || sigismember(&blocked, SIGPIPE) == 1) {
    return "SIGPIPE is blocked";
  }
  return {};
}

// Runs `body` in a forked child in which SIGPIPE has its default action (checked before and after
// `body`: the code under test must not change it). `body` returns "" when the scenario behaved,
// else what went wrong (no gtest assertions in it: they would fail in the child only). Each call
// of the `step` it is given waits while `between` runs in this process (e.g. to restart a server
// the child is connected to). Success when the child ran `body` to its end and it returned "";
// a child killed by a signal (SIGPIPE), or still running after `bound_s`, fails.
inline ::testing::AssertionResult runs_in_a_child(
    const std::function<std::string(const std::function<void()>& step)>& body,
    const std::function<void()>& between = {}, int bound_s = 60) {
  int up[2], down[2];  // child -> parent: 's' (a step) or 'e' then the report; parent -> child: go
  if (::pipe(up) != 0 || ::pipe(down) != 0) return ::testing::AssertionFailure() << "no pipe";
  const pid_t child = ::fork();
  if (child < 0) return ::testing::AssertionFailure() << "cannot fork: " << std::strerror(errno);
  if (child == 0) {
    ::close(up[0]);
    ::close(down[1]);
    const auto step = [&] {
      char go = 0;
      (void)!::write(up[1], "s", 1);
      (void)!::read(down[0], &go, 1);
    };
    std::string report = sigpipe_not_default();
    if (report.empty()) report = body(step);
    if (report.empty()) report = sigpipe_not_default();
    (void)!::write(up[1], "e", 1);
    (void)!::write(up[1], report.data(), report.size());
    ::_exit(0);  // no destructor of the parent's objects runs here
  }
  ::close(up[1]);
  ::close(down[0]);
  std::string report;
  bool ended = false, hung = false;
  for (;;) {
    pollfd ready{up[0], POLLIN, 0};
    if (::poll(&ready, 1, bound_s * 1000) == 0) {
      hung = true;
      ::kill(child, SIGKILL);
      break;
    }
    char byte = 0;
    if (::read(up[0], &byte, 1) != 1) break;
    if (byte == 's') {
      if (between) between();
      (void)!::write(down[1], "g", 1);
      continue;
    }
    ended = true;
    char buffer[4096];
    for (ssize_t n; (n = ::read(up[0], buffer, sizeof buffer)) > 0;) {
      report.append(buffer, static_cast<std::size_t>(n));
    }
    break;
  }
  ::close(up[0]);
  ::close(down[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (hung) return ::testing::AssertionFailure() << "the child still ran after " << bound_s << " s";
  if (WIFSIGNALED(status)) {
    return ::testing::AssertionFailure() << "the child was killed by signal " << WTERMSIG(status)
                                         << " (" << ::strsignal(WTERMSIG(status)) << ")";
  }
  if (!ended || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return ::testing::AssertionFailure() << "the child did not run to its end";
  }
  if (!report.empty()) return ::testing::AssertionFailure() << report;
  return ::testing::AssertionSuccess();
}

}  // namespace cubby::testing
