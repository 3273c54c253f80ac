// Runs the built `cubby` command-line tool (CUBBY_CLI_PATH, set by tests/CMakeLists.txt) in a child
// process with its own store, capturing exit code, stdout and stderr through files.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "util/spawn.hpp"

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
  std::vector<std::string> env = cubby::child_environment({}, {drop_env_prefix});
  env.push_back("CUBBY_DIR=" + store.string());
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<std::string> argv{CUBBY_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto pid = cubby::spawn(
      {CUBBY_CLI_PATH,
       std::move(argv),
       std::move(env),
       {cubby::ChildFd::open(STDOUT_FILENO, files.out, O_WRONLY | O_CREAT | O_TRUNC),
        cubby::ChildFd::open(STDERR_FILENO, files.err, O_WRONLY | O_CREAT | O_TRUNC)}});
  if (!pid) {
    ADD_FAILURE() << pid.error().message;
    return -1;
  }
  return *pid;
}

// Waits for a child started by start_cli and reads what it wrote; exit_code -1 if pid is -1.
inline CliOutcome finish_cli(pid_t pid, const CliOutputFiles& files) {
  CliOutcome run;
  if (pid < 0) return run;
  run.exit_code = cubby::wait_exit_code(pid);
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

// A one-kernel template program the admin tests compile (ns::k<T, N>).
inline constexpr const char* kTemplateKernel =
    "namespace ns { template <class T, int N> __global__ void k(T* p) { p[0] = T(N); } }\n";

// The value of `cubby stats`'s row `label` (after its padding), or "" when there is no such row.
inline std::string stats_row(const std::string& out, const std::string& label) {
  const std::size_t at = out.find("\n" + label + " ");
  if (at == std::string::npos) return "";
  const std::size_t value = out.find_first_not_of(' ', at + 1 + label.size());
  return out.substr(value, out.find('\n', value) - value);
}

}  // namespace cubby::testing
