#include "cubby/testing/options.hpp"

#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

#include "cubby/config.hpp"
#include "cubby/error.hpp"

namespace cubby::testing {
namespace {

constexpr std::string_view kPrefix = "--cubby_";

bool parse_bool_or_throw(std::string_view what, std::string_view text) {
  auto parsed = parse_bool(text);
  if (!parsed) {
    throw Error(Errc::invalid_argument, std::string(what) + "=" + std::string(text) +
                                            " is not a boolean; use 1/0, true/false, yes/no or "
                                            "on/off");
  }
  return *parsed;
}

// For "--cubby_name" and "--cubby_name=value": the value (empty when absent), or nullopt when
// `argument` is another flag.
std::optional<std::string_view> flag_value(std::string_view argument, std::string_view name,
                                           bool* has_value) {
  if (!argument.starts_with(kPrefix)) return std::nullopt;
  argument.remove_prefix(kPrefix.size());
  if (!argument.starts_with(name)) return std::nullopt;
  argument.remove_prefix(name.size());
  if (argument.empty()) {
    *has_value = false;
    return argument;
  }
  if (argument.front() != '=') return std::nullopt;
  *has_value = true;
  return argument.substr(1);
}

}  // namespace

Options Options::from_env() {
  Options options;
  if (const char* value = std::getenv("CUBBY_REQUIRE_WARM"); value != nullptr && *value != '\0') {
    options.require_warm = parse_bool_or_throw("CUBBY_REQUIRE_WARM", value);
  }
  return options;
}

std::string flags_help() {
  return "  --cubby_dir=DIR           the cubby store (default: CUBBY_DIR, else ~/.cache/cubby)\n"
         "  --cubby_require_warm      fail every test that compiles a kernel "
         "(CUBBY_REQUIRE_WARM=1)\n"
         "  --cubby_quiet             no cubby summary line at the end\n";
}

Options parse_flags(int* argc, char** argv) { return parse_flags(argc, argv, Options::from_env()); }

Options parse_flags(int* argc, char** argv, Options defaults) {
  Options options = std::move(defaults);
  std::vector<char*> kept;
  for (int i = 0; i < *argc; ++i) {
    const std::string_view argument = argv[i];
    if (i == 0 || !argument.starts_with(kPrefix)) {
      kept.push_back(argv[i]);
      continue;
    }
    bool has_value = false;
    if (auto value = flag_value(argument, "dir", &has_value)) {
      if (!has_value || value->empty()) {
        throw Error(Errc::invalid_argument,
                    "--cubby_dir needs a folder: --cubby_dir=/path/to/store");
      }
      options.dir = std::string(*value);
    } else if (auto warm = flag_value(argument, "require_warm", &has_value)) {
      options.require_warm = !has_value || parse_bool_or_throw("--cubby_require_warm", *warm);
    } else if (auto quiet = flag_value(argument, "quiet", &has_value)) {
      options.quiet = !has_value || parse_bool_or_throw("--cubby_quiet", *quiet);
    } else {
      throw Error(Errc::invalid_argument, "unknown flag " + std::string(argument) +
                                              "; cubby's flags are:\n" + flags_help());
    }
  }
  for (std::size_t i = 0; i < kept.size(); ++i) argv[i] = kept[i];
  *argc = static_cast<int>(kept.size());
  argv[*argc] = nullptr;  // argv[argc] is null by convention; the slot exists (argc only shrank)
  return options;
}

}  // namespace cubby::testing
