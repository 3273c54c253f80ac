#include "util/spawn.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

extern char** environ;

namespace cubby {
namespace {

// "NAME=" of a "NAME=value" item (the whole item when it has no '=').
std::string_view name_of(std::string_view item) { return item.substr(0, item.find('=') + 1); }

std::vector<char*> c_strings(std::vector<std::string>& items) {
  std::vector<char*> pointers;
  pointers.reserve(items.size() + 1);
  for (std::string& item : items) pointers.push_back(item.data());
  pointers.push_back(nullptr);
  return pointers;
}

// posix_spawn_file_actions_t owned for one spawn.
class FileActions {
 public:
  FileActions() { ::posix_spawn_file_actions_init(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  ~FileActions() { ::posix_spawn_file_actions_destroy(&actions_); }

  // 0 or an errno.
  int add(const ChildFd& child) {
    if (child.from >= 0) return ::posix_spawn_file_actions_adddup2(&actions_, child.from, child.fd);
    return ::posix_spawn_file_actions_addopen(&actions_, child.fd, child.path.c_str(), child.flags,
                                              0644);
  }
  const posix_spawn_file_actions_t* get() const { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_{};
};

}  // namespace

std::vector<std::string> child_environment(const std::vector<std::string>& set,
                                           const std::vector<std::string>& drop) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view item(*entry);
    const bool dropped =
        std::any_of(drop.begin(), drop.end(),
                    [&](const std::string& prefix) { return item.starts_with(prefix); }) ||
        std::any_of(set.begin(), set.end(),
                    [&](const std::string& given) { return name_of(given) == name_of(item); });
    if (!dropped) env.emplace_back(item);
  }
  env.insert(env.end(), set.begin(), set.end());
  return env;
}

Result<pid_t> spawn(const SpawnRequest& request) {
  const std::string program = request.program.string();
  std::vector<std::string> argv = request.argv.empty() ? std::vector{program} : request.argv;
  std::vector<std::string> env = request.env;
  const std::vector<char*> args = c_strings(argv);
  const std::vector<char*> envp = c_strings(env);
  FileActions actions;
  int error = 0;
  for (const ChildFd& child : request.fds) {
    if (error == 0) error = actions.add(child);
  }
  pid_t pid = -1;
  if (error == 0) {
    const bool search = program.find('/') == std::string::npos;
    error = search ? ::posix_spawnp(&pid, program.c_str(), actions.get(), nullptr, args.data(),
                                    envp.data())
                   : ::posix_spawn(&pid, program.c_str(), actions.get(), nullptr, args.data(),
                                   envp.data());
  }
  if (error != 0) {
    return fail(error == ENOENT ? Errc::not_found : Errc::io,
                "cannot start " + program + ": " + std::strerror(error));
  }
  return pid;
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  for (;;) {
    if (::waitpid(pid, &status, 0) == pid) break;
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace cubby
