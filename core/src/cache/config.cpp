#include "cubby/config.hpp"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <set>
#include <string>

#include "cache/store_config.hpp"

namespace cubby {
namespace {

// The value of an environment variable, or nullptr when it is unset or empty.
const char* env(const char* name) {
  const char* value = std::getenv(name);
  return (value != nullptr && *value != '\0') ? value : nullptr;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Failure bad_variable(const char* name, const char* value, const Failure& why) {
  return fail(Errc::invalid_argument, name, "=\"", value, "\" is not valid: ", why.message);
}

// A CUBBY_MAX_SIZE below this evicts (nearly) every entry right after it is written: a typo
// ("1" for "1G") rather than a bound anyone wants, so it is warned about once per process.
constexpr std::uint64_t kMaxSizeFloor = 1ull << 20;

// `name`: the variable, or the file and key, that set the bound.
void warn_small_max_size_once(const std::string& name, const std::string& value) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  std::fprintf(stderr,
               "cubby: warning: %s=\"%s\" is below 1 MiB: nearly every entry is "
               "evicted right after it is written, so almost nothing is cached (a size is in "
               "bytes unless suffixed: 500M, 5G)\n",
               name.c_str(), value.c_str());
}

// Says `problem` (a line of a store's cubby.conf) on stderr, once per process and problem: every
// Config::load of the store finds it again.
void warn_store_file_once(const std::string& problem) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  const std::lock_guard lock(mutex);
  if (!warned.insert(problem).second) return;
  std::fprintf(stderr, "cubby: warning: %s (ignored: the default applies)\n", problem.c_str());
}

// A count of things ("1024"): decimal digits only, no size suffixes.
Result<std::uint64_t> parse_count(std::string_view text) {
  constexpr std::size_t kMaxDigits = 18;  // no overflow of std::uint64_t
  if (text.empty() || text.size() > kMaxDigits ||
      text.find_first_not_of("0123456789") != std::string_view::npos) {
    return fail(Errc::invalid_argument,
                "expected a number of entries such as 1024 (a count, not a size)");
  }
  std::uint64_t value = 0;
  for (const char c : text) value = value * 10 + static_cast<std::uint64_t>(c - '0');
  return value;
}

}  // namespace

std::filesystem::path default_store_dir() {
  if (const char* dir = env("CUBBY_DIR")) return dir;
  if (const char* xdg = env("XDG_CACHE_HOME")) return std::filesystem::path(xdg) / "cubby";
  if (const char* home = env("HOME")) return std::filesystem::path(home) / ".cache" / "cubby";
  return std::filesystem::temp_directory_path() / "cubby";
}

Result<std::uint64_t> parse_size(std::string_view text) {
  std::string t = lower(text);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  if (t.ends_with("ib"))
    t.resize(t.size() - 2);
  else if (t.ends_with("b"))
    t.resize(t.size() - 1);
  std::uint64_t scale = 1;
  if (!t.empty()) {
    switch (t.back()) {
      case 'k':
        scale = 1ull << 10;
        break;
      case 'm':
        scale = 1ull << 20;
        break;
      case 'g':
        scale = 1ull << 30;
        break;
      case 't':
        scale = 1ull << 40;
        break;
      default:
        break;
    }
    if (scale != 1) t.pop_back();
  }
  if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos) {
    return fail(Errc::invalid_argument, "expected a size such as 500M, 5G or a number of bytes");
  }
  std::uint64_t value = 0;
  for (char c : t) {
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
      return fail(Errc::invalid_argument, "size is too large");
    }
    value = value * 10 + digit;
  }
  if (value > std::numeric_limits<std::uint64_t>::max() / scale) {
    return fail(Errc::invalid_argument, "size is too large");
  }
  return value * scale;
}

Result<std::uint64_t> parse_duration_s(std::string_view text) {
  std::string t = lower(text);
  std::uint64_t scale = 1;
  if (!t.empty()) {
    switch (t.back()) {
      case 's':
        break;
      case 'm':
        scale = 60;
        break;
      case 'h':
        scale = 3600;
        break;
      case 'd':
        scale = 86400;
        break;
      default:
        scale = 0;
        break;
    }
    if (scale != 0) t.pop_back();
    if (scale == 0) scale = 1;
  }
  if (t.empty() || t.size() > 12 || t.find_first_not_of("0123456789") != std::string::npos) {
    return fail(Errc::invalid_argument, "expected seconds, or a number with s, m, h or d");
  }
  return std::stoull(t) * scale;
}

Result<bool> parse_bool(std::string_view text) {
  const std::string t = lower(text);
  if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
  if (t == "0" || t == "false" || t == "no" || t == "off") return false;
  return fail(Errc::invalid_argument, "expected 1/0, true/false, yes/no or on/off");
}

namespace {

// CUBBY_SUITE, CUBBY_PCH (1/0 or eager) and CUBBY_JOBS into `config`.
Result<void> read_cold_path(Config& config) {
  if (const char* value = env("CUBBY_SUITE")) config.suite = value;
  if (const char* value = env("CUBBY_PCH")) {
    config.pch_eager = lower(value) == "eager";
    auto on = config.pch_eager ? Result<bool>(true) : parse_bool(value);
    if (!on) {
      return bad_variable("CUBBY_PCH", value,
                          fail(Errc::invalid_argument, "expected 1/0 (on/off, ...) or eager"));
    }
    config.pch = *on;
  }
  if (const char* value = env("CUBBY_JOBS")) {
    const auto jobs = parse_count(value);
    if (!jobs || *jobs > 4096) {
      return bad_variable("CUBBY_JOBS", value,
                          Failure{Errc::invalid_argument,
                                  "expected a number of worker processes (0: one per core)"});
    }
    config.jobs = static_cast<unsigned>(*jobs);
  }
  return {};
}

// CUBBY_REMOTE_SECRET, CUBBY_REMOTE_TOKEN, CUBBY_ARCH, CUBBY_BASE_DIR, CUBBY_DISABLE,
// CUBBY_PREFETCH, CUBBY_MEMORY_ENTRIES and the cold path's variables (the variables no store file
// holds).
Result<void> read_process_variables(Config& config) {
  if (const char* value = env("CUBBY_REMOTE_SECRET")) config.remote_secret = value;
  if (const char* value = env("CUBBY_REMOTE_TOKEN")) config.remote_token = value;
  if (const char* value = env("CUBBY_ARCH")) config.default_arch = value;
  if (auto cold = read_cold_path(config); !cold) return cold.error();
  if (const char* value = env("CUBBY_BASE_DIR")) {
    const std::filesystem::path base(value);
    if (!base.is_absolute()) {
      return bad_variable("CUBBY_BASE_DIR", value,
                          fail(Errc::invalid_argument, "must be an absolute folder"));
    }
    config.base_dir = base.lexically_normal();
  }
  for (auto [name, flag] : {std::pair{"CUBBY_DISABLE", &config.disabled},
                            std::pair{"CUBBY_PREFETCH", &config.prefetch}}) {
    if (const char* value = env(name)) {
      auto parsed = parse_bool(value);
      if (!parsed) return bad_variable(name, value, parsed.error());
      *flag = *parsed;
    }
  }
  if (const char* value = env("CUBBY_MEMORY_ENTRIES")) {
    auto count = parse_count(value);
    if (!count) return bad_variable("CUBBY_MEMORY_ENTRIES", value, count.error());
    config.memory_entries = static_cast<std::size_t>(*count);
  }
  return {};
}

}  // namespace

Result<Config> Config::from_env() { return load({}); }

Result<Config> Config::load(const std::filesystem::path& dir) {
  Config config;
  config.dir = dir.empty() ? default_store_dir() : dir;
  // The store's settings: the variable over <dir>/cubby.conf over the default.
  // A bad line of the store's file is the store's problem, not this process's: like an unwritable
  // store, it is warned about once and the setting keeps its default (a bad variable is an error).
  std::vector<std::string> problems;
  auto settings = effective_settings(config.dir, &problems);
  if (!settings) return settings.error();
  for (const std::string& problem : problems) warn_store_file_once(problem);
  for (const EffectiveSetting& setting : *settings) {
    if (setting.origin == SettingOrigin::default_value) continue;
    Config applied_to = config;  // a value refused half way must leave the default in place
    if (auto applied = setting.info->apply(applied_to, setting.value); !applied) {
      if (setting.origin == SettingOrigin::environment) {
        const std::string name(setting.info->env);
        return bad_variable(name.c_str(), escaped(setting.value).c_str(), applied.error());
      }
      warn_store_file_once(
          store_config_path(config.dir).string() + ":" + std::to_string(setting.line) + ": " +
          std::string(setting.info->key) + " = \"" + escaped(setting.value) +
          "\" is not valid: " + applied.error().message + "; fix it with `cubby config " +
          std::string(setting.info->key) + " VALUE`");
      continue;
    }
    config = std::move(applied_to);
    if (setting.info->key == "max_size" && config.max_size < kMaxSizeFloor) {
      const std::string name = setting.origin == SettingOrigin::environment
                                   ? std::string(setting.info->env)
                                   : store_config_path(config.dir).string() + ": max_size";
      warn_small_max_size_once(name, setting.value);
    }
  }
  if (auto process = read_process_variables(config); !process) return process.error();
  return config;
}

}  // namespace cubby
