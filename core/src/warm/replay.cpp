// What a replayed recipe may do and say (replay.hpp).
#include "warm/replay.hpp"

#include <cstddef>
#include <string_view>
#include <vector>

#include "cuda/nvrtc_options.hpp"

namespace cubby {
namespace {

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  return lines;
}

std::string_view trimmed(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// The 1-based source line a diagnostic `<program>(N): ...` is located at, or 0 when `line` is not
// one of `program`'s diagnostics.
std::size_t diagnostic_line(std::string_view line, std::string_view program) {
  if (program.empty() || !line.starts_with(program) || line.size() <= program.size() ||
      line[program.size()] != '(') {
    return 0;
  }
  std::size_t at = program.size() + 1;
  std::size_t number = 0;
  while (at < line.size() && line[at] >= '0' && line[at] <= '9' && number < 100'000'000) {
    number = number * 10 + static_cast<std::size_t>(line[at++] - '0');
  }
  return line.substr(at).starts_with("): ") ? number : 0;
}

bool is_caret_line(std::string_view line) {
  return !trimmed(line).empty() && line.find_first_not_of(" \t~^") == std::string_view::npos;
}

}  // namespace

Result<void> check_replayable(const CompileRequest& request) {
  return check_replayable_options(request.options);
}

std::string replay_error(const CompileRequest& request, const Error& error) {
  const std::string_view message = error.what();
  std::string text(message.substr(0, message.find('\n')));
  if (error.log().empty()) return text;
  const std::vector<std::string_view> source = lines_of(request.source);
  const std::vector<std::string_view> log = lines_of(error.log());
  std::size_t elsewhere = 0;
  for (std::size_t i = 0; i < log.size(); ++i) {
    const std::size_t number = diagnostic_line(log[i], request.program_name);
    if (number == 0 || number > source.size()) {
      const std::string_view line = trimmed(log[i]);
      elsewhere += line.find(": error") != std::string_view::npos ||
                   line.find(": warning") != std::string_view::npos;
      continue;
    }
    text.append("\n").append(log[i]);
    if (i + 1 < log.size() && !trimmed(log[i + 1]).empty() &&
        trimmed(log[i + 1]) == trimmed(source[number - 1])) {
      text.append("\n").append(log[++i]);
      if (i + 1 < log.size() && is_caret_line(log[i + 1])) text.append("\n").append(log[++i]);
    }
  }
  if (elsewhere != 0) {
    text += "\n(" + std::to_string(elsewhere) +
            " diagnostic(s) located outside the recipe's source are not shown: compile the "
            "program yourself to see them)";
  }
  return text;
}

}  // namespace cubby
