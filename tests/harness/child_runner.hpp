// Runs the harness's child test binary (harness_child, linked with cubby::gtest_main) in a clean
// environment and reads back what it reported: exit code, output, --gtest_output files.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace cubby::testing {

struct ChildRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

inline std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'')
      quoted += "'\\''";
    else
      quoted += c;
  }
  return quoted + "'";
}

// The command line that runs the child with `args` and exactly the variables in `env` among the
// ones that change its behaviour (CUBBY_*, GTEST_*).
inline std::string child_command(const std::vector<std::string>& args,
                                 const std::map<std::string, std::string>& env) {
  std::string command =
      "env -u CUBBY_REQUIRE_WARM -u CUBBY_DIR -u CUBBY_DISABLE -u CUBBY_READ_ONLY"
      " -u CUBBY_SUITE -u CUBBY_PREFETCH -u CUBBY_JOBS -u CUBBY_STATS_FILE"
      " -u GTEST_OUTPUT -u GTEST_FILTER -u GTEST_TOTAL_SHARDS"
      " -u GTEST_SHARD_INDEX -u GTEST_SHARD_STATUS_FILE";
  for (const auto& [name, value] : env) command += " " + shell_quote(name + "=" + value);
  command += " " + shell_quote(CUBBY_HARNESS_CHILD);
  for (const auto& arg : args) command += " " + shell_quote(arg);
  return command;
}

// Runs the child, its output captured in `scratch`/child.log.
inline ChildRun run_child(const std::filesystem::path& scratch,
                          const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& env) {
  const std::filesystem::path log = scratch / "child.log";
  const std::string command = child_command(args, env) + " >" + shell_quote(log) + " 2>&1";
  const int status = std::system(command.c_str());
  ChildRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.output = read_text(log);
  return run;
}

// The <testcase name="NAME" ...> ... </testcase> element of a GoogleTest XML report, or "".
inline std::string xml_testcase(const std::string& xml, const std::string& name) {
  const std::size_t start = xml.find("<testcase name=\"" + name + "\"");
  if (start == std::string::npos) return {};
  const std::size_t self_closed = xml.find("/>", start);
  const std::size_t open_end = xml.find('>', start);
  if (self_closed != std::string::npos && self_closed + 1 == open_end) {
    return xml.substr(start, open_end + 1 - start);
  }
  const std::size_t end = xml.find("</testcase>", start);
  return end == std::string::npos ? std::string() : xml.substr(start, end - start);
}

// The value of <property name="NAME" value="..."/> inside `element`, if any.
inline std::optional<std::string> xml_property(const std::string& element,
                                               const std::string& name) {
  const std::string marker = "<property name=\"" + name + "\" value=\"";
  const std::size_t start = element.find(marker);
  if (start == std::string::npos) return std::nullopt;
  const std::size_t value = start + marker.size();
  return element.substr(value, element.find('"', value) - value);
}

// The value of the attribute NAME="..." of the first element named TAG, if any.
inline std::optional<std::string> xml_attribute(const std::string& xml, const std::string& tag,
                                                const std::string& name) {
  const std::size_t start = xml.find("<" + tag + " ");
  if (start == std::string::npos) return std::nullopt;
  const std::size_t end = xml.find('>', start);
  const std::string element = xml.substr(start, end - start);
  const std::string marker = " " + name + "=\"";
  const std::size_t at = element.find(marker);
  if (at == std::string::npos) return std::nullopt;
  const std::size_t value = at + marker.size();
  return element.substr(value, element.find('"', value) - value);
}

}  // namespace cubby::testing
