// NVRTC's options: one table of every spelling cubby knows (NVRTC 13.0), with how each takes its
// value and whether a recipe replayed by `cubby warm` may carry it. The include-option parser
// (include_plan.hpp) asks it which options take the next argument as their value; the replay
// check (warm/replay.hpp) asks it which options are safe to run on a recipe someone else recorded.
// Adding an option form is a one-line change of the table in nvrtc_options.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/error.hpp"

namespace cubby {

// How an option takes its value.
enum class OptionValue {
  none,      // a flag: `-G`, `--device-debug`
  equals,    // only `--name=value` / `-name=value`: `-std=c++17`, `--time=F`
  separate,  // `=value` or the next option: `-ftz=true`, `-ftz true`, `-Xptxas -v`
  glued,     // as `separate`, and the short form also glued on: `-DX`, `-D X`, `-D=X`
};

// One row: the option's spellings, its value, and whether a replayed recipe may carry it (false:
// it writes or reads a file of its own, or passes options on to a part of NVRTC cubby does not
// model, `refusal` says which).
struct NvrtcOption {
  std::string_view short_name;  // "-D"; may equal long_name's form when NVRTC has one spelling
  std::string_view long_name;   // "--define-macro"
  OptionValue value;
  bool replayable;
  std::string_view refusal;  // why not, when !replayable
};

// One option as written in a request: the table row it matched (nullptr: unknown to cubby), its
// value (empty for a flag), and how many entries of the option list it used (1 or 2).
struct ParsedOption {
  const NvrtcOption* row = nullptr;
  std::string value;
  std::size_t used = 1;
};

// The option at options[i], in any of its spellings. Requires i < options.size().
ParsedOption parse_nvrtc_option(const std::vector<std::string>& options, std::size_t i);

// Whether an option of `options`, read as NVRTC reads them (a value taken from the next entry is
// not an option), has a table row for which `pred(row)` holds.
template <class Predicate>
bool any_nvrtc_option(const std::vector<std::string>& options, Predicate pred) {
  for (std::size_t i = 0; i < options.size();) {
    const ParsedOption parsed = parse_nvrtc_option(options, i);
    if (parsed.row != nullptr && pred(*parsed.row)) return true;
    i += parsed.used;
  }
  return false;
}

// Whether `option` (as written) is an option whose value may be the next entry (`-D X`): that
// entry is its value, never an option.
bool takes_next_as_value(std::string_view option);

// Errc::invalid_argument naming it when the last option takes its value from the next one and has
// none (`-I`, `-include`, `-D` at the end): NVRTC would take the first option cubby appends (the
// toolkit's --include-path) as its value, and read a file the key does not cover.
Result<void> check_last_option_has_its_value(const std::vector<std::string>& options);

// Ok when every option of `options` may be replayed from a recipe someone else recorded; else
// Errc::invalid_argument naming the first option that may not (a file it would write or read, an
// option cubby does not know), and what to do.
Result<void> check_replayable_options(const std::vector<std::string>& options);

}  // namespace cubby
