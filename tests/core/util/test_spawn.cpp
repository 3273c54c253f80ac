// Tests of util/spawn: argv, environment and descriptors reach the child as requested; a missing
// program is a clear failure; exit codes and signals come back from wait_exit_code.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "util/spawn.hpp"

namespace cubby {
namespace {

using testing::read_text;
using testing::ScopedEnv;
using testing::TempDir;

constexpr int kCreate = O_WRONLY | O_CREAT | O_TRUNC;

// Runs `sh -c script` (a name searched on PATH) with `fds`; its exit code.
int run_shell(const std::string& script, std::vector<ChildFd> fds,
              std::vector<std::string> env = child_environment()) {
  auto pid = spawn({"sh", {"sh", "-c", script}, std::move(env), std::move(fds)});
  EXPECT_TRUE(pid.ok()) << pid.error().message;
  return pid ? wait_exit_code(*pid) : -1;
}

TEST(Spawn, PassesArgvAndTheGivenEnvironmentOnly) {
  TempDir dir("spawn");
  const ScopedEnv inherited("CUBBY_SPAWN_INHERITED", "kept");
  const auto out = dir / "out";
  auto pid =
      spawn({"/bin/sh",
             {"sh", "-c", R"(printf '%s|%s|%s|%s' "$0" "$1" "$CUBBY_SPAWN_SET" "${HOME-unset}")",
              "zero", "one two"},
             {"CUBBY_SPAWN_SET=yes"},
             {ChildFd::open(1, out.string(), kCreate)}});
  ASSERT_TRUE(pid.ok()) << pid.error().message;
  EXPECT_EQ(wait_exit_code(*pid), 0);
  EXPECT_EQ(read_text(out), "zero|one two|yes|unset");  // nothing of this process's environment
}

TEST(ChildEnvironment, InheritsDropsByPrefixAndReplacesByName) {
  const ScopedEnv a("CUBBY_SPAWN_A", "1");
  const ScopedEnv b("CUBBY_SPAWN_B", "2");
  const ScopedEnv c("CUBBY_SPAWN_C", "3");
  const std::vector<std::string> env =
      child_environment({"CUBBY_SPAWN_B=new", "CUBBY_SPAWN_D=4"}, {"CUBBY_SPAWN_A="});
  const auto count = [&](const std::string& prefix) {
    return std::count_if(env.begin(), env.end(),
                         [&](const std::string& item) { return item.starts_with(prefix); });
  };
  EXPECT_EQ(count("CUBBY_SPAWN_A="), 0);
  EXPECT_EQ(count("CUBBY_SPAWN_B="), 1);
  EXPECT_EQ(count("CUBBY_SPAWN_C=3"), 1);
  ASSERT_GE(env.size(), 2u);
  EXPECT_EQ(env[env.size() - 2], "CUBBY_SPAWN_B=new");  // `set` last, in its order
  EXPECT_EQ(env.back(), "CUBBY_SPAWN_D=4");
  EXPECT_EQ(count("PATH="), 1);  // the rest is inherited
}

TEST(Spawn, DuplicatesAndOpensDescriptorsInOrder) {
  TempDir dir("spawn");
  testing::write_text(dir / "in", "from stdin\n");
  int reply[2];
  ASSERT_EQ(::pipe2(reply, O_CLOEXEC), 0);
  // stdin from a file, stdout to a file, the pipe's write end as fd 3 (warm_pool's reply fd).
  const int code =
      run_shell("cat; echo reply >&3",
                {ChildFd::open(0, (dir / "in").string(), O_RDONLY),
                 ChildFd::open(1, (dir / "out").string(), kCreate), ChildFd::dup(reply[1], 3)});
  ::close(reply[1]);
  char buffer[64] = {};
  const ssize_t got = ::read(reply[0], buffer, sizeof buffer - 1);
  ::close(reply[0]);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(std::string(buffer, static_cast<std::size_t>(std::max<ssize_t>(got, 0))), "reply\n");
  EXPECT_EQ(read_text(dir / "out"), "from stdin\n");
}

TEST(Spawn, RoutesStdoutWhereStderrGoes) {
  // warm_pool's workers: stderr to /dev/null or inherited, then stdout where stderr goes.
  TempDir dir("spawn");
  const int code =
      run_shell("echo out; echo err >&2",
                {ChildFd::open(2, (dir / "err").string(), kCreate), ChildFd::dup(2, 1)});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(read_text(dir / "err"), "out\nerr\n");
  // And stdout and stderr into files of their own (the benchmarks' and tests' runners).
  EXPECT_EQ(run_shell("echo out; echo err >&2", {ChildFd::open(1, (dir / "1").string(), kCreate),
                                                 ChildFd::open(2, (dir / "2").string(), kCreate)}),
            0);
  EXPECT_EQ(read_text(dir / "1"), "out\n");
  EXPECT_EQ(read_text(dir / "2"), "err\n");
}

TEST(Spawn, AMissingProgramIsNotFoundAndNamesIt) {
  for (const char* program : {"/nonexistent/cubby-spawn-test", "cubby-no-such-program-on-path"}) {
    auto pid = spawn({program, {}, child_environment(), {}});
    ASSERT_FALSE(pid.ok()) << program;
    EXPECT_EQ(pid.error().code, Errc::not_found) << program;
    EXPECT_NE(pid.error().message.find(std::string("cannot start ") + program), std::string::npos)
        << pid.error().message;
    EXPECT_NE(pid.error().message.find("No such file"), std::string::npos) << pid.error().message;
  }
}

TEST(WaitExitCode, GivesTheStatusOr128PlusTheSignal) {
  EXPECT_EQ(run_shell("exit 7", {}), 7);
  EXPECT_EQ(run_shell("kill -TERM $$", {}), 128 + 15);
  EXPECT_EQ(wait_exit_code(::getpid()), -1);  // not a child
}

}  // namespace
}  // namespace cubby
