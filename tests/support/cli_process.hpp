// Runs the built `cubby` command-line tool (CUBBY_CLI_PATH, set by tests/CMakeLists.txt) in a child
// process with its own store, capturing exit code, stdout and stderr through files.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_support.hpp"

extern char** environ;

namespace cubby::testing {

struct CliOutcome {
  int exit_code = -1;  // 128 + signal when the process was killed by a signal
  std::string out;
  std::string err;
};

// Where a child's stdout and stderr go.
struct CliOutputFiles {
  std::filesystem::path out;
  std::filesystem::path err;
};

// Starts `cubby args...` with CUBBY_DIR=`store` and `extra_env` ("NAME=value" items) added to this
// process's environment, less the variables whose "NAME=" starts with `drop_env_prefix`. Returns
// the pid, or -1 (and a test failure) if the binary cannot be started.
inline pid_t start_cli(const std::vector<std::string>& args, const std::filesystem::path& store,
                       const CliOutputFiles& files, const std::vector<std::string>& extra_env = {},
                       const std::string& drop_env_prefix = "CUBBY_DIR=") {
  std::vector<std::string> env_strings;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, drop_env_prefix.c_str(), drop_env_prefix.size()) != 0)
      env_strings.emplace_back(*entry);
  }
  env_strings.push_back("CUBBY_DIR=" + store.string());
  env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (auto& item : env_strings) envp.push_back(item.data());
  envp.push_back(nullptr);

  std::vector<std::string> argv_strings{CUBBY_CLI_PATH};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& item : argv_strings) argv.push_back(item.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, files.out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, files.err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    ADD_FAILURE() << "cannot start " << CUBBY_CLI_PATH << ": " << std::strerror(spawned);
    return -1;
  }
  return pid;
}

// Waits for a child started by start_cli and reads what it wrote; exit_code -1 if pid is -1.
inline CliOutcome finish_cli(pid_t pid, const CliOutputFiles& files) {
  CliOutcome run;
  if (pid < 0) return run;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = read_text(files.out);
  run.err = read_text(files.err);
  return run;
}

// Runs `cubby args...` to completion (see start_cli).
inline CliOutcome run_cli(const std::vector<std::string>& args, const std::filesystem::path& store,
                          const CliOutputFiles& files) {
  return finish_cli(start_cli(args, store, files), files);
}

// The JSON document a `cubby ... --json` run printed on stdout (verify's report, ls's rows, ...).
// When stdout is not JSON: a test failure naming stdout and stderr, and a discarded value
// (`is_discarded()`; reading a field of it throws, which fails the test too).
inline nlohmann::json cli_json(const CliOutcome& run) {
  nlohmann::json document = nlohmann::json::parse(run.out, nullptr, false);
  if (document.is_discarded()) {
    ADD_FAILURE() << "stdout is not JSON: " << run.out << "\nstderr: " << run.err;
  }
  return document;
}

}  // namespace cubby::testing
