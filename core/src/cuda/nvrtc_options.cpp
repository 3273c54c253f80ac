// The table of NVRTC's options (nvrtc_options.hpp).
#include "cuda/nvrtc_options.hpp"

#include <algorithm>
#include <iterator>
#include <optional>

namespace cubby {
namespace {

constexpr std::string_view kWritesFile = "it writes a file of its own";
constexpr std::string_view kReadsFile = "it reads a file outside the include plan";
constexpr std::string_view kPch = "cubby manages precompiled headers itself (CUBBY_PCH)";
constexpr std::string_view kPassesOn = "it passes options to a part of NVRTC cubby does not model";

// Every NVRTC 13.0 option cubby knows, short and long spelling. Forms that take their value as
// the next option were verified against NVRTC 13.0 (nvrtcCompileProgram accepts "FLAG VALUE").
constexpr NvrtcOption kOptions[] = {
    // Targets, separate compilation, debugging.
    {"-arch", "--gpu-architecture", OptionValue::separate, true, {}},
    {"-rdc", "--relocatable-device-code", OptionValue::separate, true, {}},
    {"-ewp", "--extensible-whole-program", OptionValue::none, true, {}},
    {"-G", "--device-debug", OptionValue::none, true, {}},
    {"-lineinfo", "--generate-line-info", OptionValue::none, true, {}},
    // Code generation.
    {"-dopt", "--dopt", OptionValue::separate, true, {}},
    {"-Xptxas", "--ptxas-options", OptionValue::separate, true, {}},  // values: kPtxasValues
    {"-maxrregcount", "--maxrregcount", OptionValue::separate, true, {}},
    {"-ftz", "--ftz", OptionValue::separate, true, {}},
    {"-prec-sqrt", "--prec-sqrt", OptionValue::separate, true, {}},
    {"-prec-div", "--prec-div", OptionValue::separate, true, {}},
    {"-fmad", "--fmad", OptionValue::separate, true, {}},
    {"-use_fast_math", "--use_fast_math", OptionValue::none, true, {}},
    {"-extra-device-vectorization", "--extra-device-vectorization", OptionValue::none, true, {}},
    {"-modify-stack-limit", "--modify-stack-limit", OptionValue::separate, true, {}},
    {"-dlto", "--dlink-time-opt", OptionValue::none, true, {}},
    {"-dlto", "--dlto", OptionValue::none, true, {}},
    {"-gen-opt-lto", "--gen-opt-lto", OptionValue::none, true, {}},
    {"-optix-ir", "--optix-ir", OptionValue::none, true, {}},
    {"-jtd", "--jump-table-density", OptionValue::separate, true, {}},
    {"-device-stack-protector", "--device-stack-protector", OptionValue::separate, true, {}},
    {"-Ofc", "--Ofast-compile", OptionValue::separate, true, {}},
    {"-split-compile", "--split-compile", OptionValue::separate, true, {}},
    {"-fdevice-syntax-only", "--fdevice-syntax-only", OptionValue::none, true, {}},
    {"-minimal", "--minimal", OptionValue::none, true, {}},
    {"-Xnvvm", "-Xnvvm", OptionValue::separate, false, kPassesOn},
    // Preprocessing: the include options are the include plan's (include_plan.hpp).
    {"-D", "--define-macro", OptionValue::glued, true, {}},
    {"-U", "--undefine-macro", OptionValue::glued, true, {}},
    {"-I", "--include-path", OptionValue::glued, true, {}},
    {"-include", "--pre-include", OptionValue::separate, true, {}},
    {"-no-source-include", "--no-source-include", OptionValue::none, true, {}},
    // Language dialect.
    {"-std", "--std", OptionValue::equals, true, {}},
    {"-builtin-move-forward", "--builtin-move-forward", OptionValue::separate, true, {}},
    {"-builtin-initializer-list", "--builtin-initializer-list", OptionValue::separate, true, {}},
    // Precompiled headers.
    {"-pch", "--pch", OptionValue::none, false, kPch},
    {"-create-pch", "--create-pch", OptionValue::equals, false, kWritesFile},
    {"-use-pch", "--use-pch", OptionValue::equals, false, kReadsFile},
    {"-pch-dir", "--pch-dir", OptionValue::equals, false, kWritesFile},
    {"-pch-verbose", "--pch-verbose", OptionValue::separate, true, {}},
    {"-pch-messages", "--pch-messages", OptionValue::separate, true, {}},
    {"-instantiate-templates-in-pch",
     "--instantiate-templates-in-pch",
     OptionValue::separate,
     true,
     {}},
    // Diagnostics and the rest.
    {"-w", "--disable-warnings", OptionValue::none, true, {}},
    {"-restrict", "--restrict", OptionValue::none, true, {}},
    {"-default-device", "--device-as-default-execution-space", OptionValue::none, true, {}},
    {"-device-int128", "--device-int128", OptionValue::none, true, {}},
    {"-device-float128", "--device-float128", OptionValue::none, true, {}},
    {"-opt-info", "--optimization-info", OptionValue::equals, true, {}},
    {"-err-no", "--display-error-number", OptionValue::none, true, {}},
    {"-no-err-no", "--no-display-error-number", OptionValue::none, true, {}},
    {"-diag-error", "--diag-error", OptionValue::separate, true, {}},
    {"-diag-suppress", "--diag-suppress", OptionValue::separate, true, {}},
    {"-diag-warn", "--diag-warn", OptionValue::separate, true, {}},
    {"-brief-diag", "--brief-diagnostics", OptionValue::separate, true, {}},
    {"-time", "--time", OptionValue::equals, false, kWritesFile},
    {"-fdevice-time-trace", "--fdevice-time-trace", OptionValue::equals, false, kWritesFile},
    {"-Xcudafe", "-Xcudafe", OptionValue::separate, false, kPassesOn},
};

// The ptxas options a replayed recipe may pass with -Xptxas: none of them names a file.
constexpr std::string_view kPtxasValues[] = {
    "-v",
    "--verbose",
    "-O0",
    "-O1",
    "-O2",
    "-O3",
    "-warn-spills",
    "--warn-on-spills",
    "-warn-lmem-usage",
    "--warn-on-local-memory-usage",
    "-warn-double-usage",
    "--warn-on-double-precision-use",
};

// The value of `name` in options[i] ("name=value", or with `separate` the next entry), or nullopt
// when options[i] is not spelled `name`.
std::optional<ParsedOption> match(const NvrtcOption& row, std::string_view name,
                                  const std::vector<std::string>& options, std::size_t i) {
  const std::string_view option = options[i];
  if (option == name) {
    ParsedOption parsed{&row, {}, 1};
    const bool next = row.value == OptionValue::separate || row.value == OptionValue::glued;
    if (next && i + 1 < options.size()) parsed = {&row, options[i + 1], 2};
    return parsed;
  }
  if (row.value != OptionValue::none && option.size() > name.size() && option.starts_with(name) &&
      option[name.size()] == '=') {
    return ParsedOption{&row, std::string(option.substr(name.size() + 1)), 1};
  }
  return std::nullopt;
}

}  // namespace

ParsedOption parse_nvrtc_option(const std::vector<std::string>& options, std::size_t i) {
  for (const NvrtcOption& row : kOptions) {
    for (const std::string_view name : {row.short_name, row.long_name}) {
      if (auto parsed = match(row, name, options, i)) return *parsed;
    }
  }
  const std::string_view option = options[i];
  for (const NvrtcOption& row : kOptions) {  // glued last: "-DX", never "-default-device"
    if (row.value == OptionValue::glued && option.size() > row.short_name.size() &&
        option.starts_with(row.short_name)) {
      return {&row, std::string(option.substr(row.short_name.size())), 1};
    }
  }
  return {};
}

bool takes_next_as_value(std::string_view option) {
  return std::any_of(std::begin(kOptions), std::end(kOptions), [&](const NvrtcOption& row) {
    return (row.value == OptionValue::separate || row.value == OptionValue::glued) &&
           (option == row.short_name || option == row.long_name);
  });
}

Result<void> check_last_option_has_its_value(const std::vector<std::string>& options) {
  if (options.empty() || !takes_next_as_value(options.back())) return {};
  // An odd run of such options at the end: "-D -I" is -D with the value "-I".
  std::size_t run = 0;
  for (auto it = options.rbegin(); it != options.rend() && takes_next_as_value(*it); ++it) ++run;
  if (run % 2 == 0) return {};
  return fail(Errc::invalid_argument, "the last option, '", options.back(),
              "', takes a value and has none; give it one ('", options.back(),
              " VALUE') or remove it");
}

Result<void> check_replayable_options(const std::vector<std::string>& options) {
  for (std::size_t i = 0; i < options.size();) {
    const ParsedOption parsed = parse_nvrtc_option(options, i);
    const std::string written = parsed.used == 2 ? options[i] + " " + options[i + 1] : options[i];
    if (parsed.row == nullptr) {
      return fail(Errc::invalid_argument, "the recipe's option '", written,
                  "' is not one cubby knows to be safe to replay; compile the program once "
                  "yourself to warm it");
    }
    if (!parsed.row->replayable) {
      return fail(Errc::invalid_argument, "the recipe's option '", written,
                  "' is not replayed: ", std::string(parsed.row->refusal),
                  "; compile the program once yourself to warm it");
    }
    if (parsed.row->long_name == "--ptxas-options" &&
        std::find(std::begin(kPtxasValues), std::end(kPtxasValues), parsed.value) ==
            std::end(kPtxasValues)) {
      return fail(Errc::invalid_argument, "the recipe's option '", written,
                  "' is not replayed: cubby replays only the ptxas options that name no file; "
                  "compile the program once yourself to warm it");
    }
    i += parsed.used;
  }
  return {};
}

}  // namespace cubby
