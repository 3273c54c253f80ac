#include "cubby/config.hpp"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "config/store_config.hpp"

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
               "evicted right after it is written, so almost nothing is cached (sizes: 500M, "
               "5G, 5Gi; a number alone is GiB)\n",
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

// Says once per process and file that the store's file may have been written by another user, so
// its settings that name a remote or a file or bound what the process holds (those of `ignored`,
// each with untrusted_because set)
// are not used, and what to do.
void warn_untrusted_store_file_once(const std::filesystem::path& file,
                                    const std::vector<const EffectiveSetting*>& ignored) {
  if (ignored.empty()) return;
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    const std::lock_guard lock(mutex);
    if (!warned.insert(file.string()).second) return;
  }
  const std::string& why = ignored.front()->untrusted_because;  // "<file> is owned by ..."
  std::string keys;
  std::string variables;
  for (const EffectiveSetting* setting : ignored) {
    keys += (keys.empty() ? "" : ", ") + std::string(setting->info->key);
    variables += (variables.empty() ? "" : ", ") + std::string(setting->info->env);
  }
  std::fprintf(stderr,
               "cubby: warning: %s: its %s setting%s ignored (a file another user may have "
               "written must not choose where cubby connects, which of your files it uses or how "
               "much it holds); "
               "set %s in your environment, or have the file owned by you or root and writable "
               "by no one else (chown, chmod go-w)\n",
               why.c_str(), keys.c_str(), ignored.size() == 1 ? " is" : "s are", variables.c_str());
}

// The most entries CUBBY_MEMORY_ENTRIES may keep decoded in a process (each can be megabytes).
constexpr std::uint64_t kMaxMemoryEntries = 1'000'000;

// A store path naming something that is not a folder (a regular file, say), or under one
// (afile/sub), cannot hold a store: warned about once per process, naming the file, and then
// treated as a store that cannot be written (every compile still works, nothing is cached).
void warn_if_store_is_a_file(const std::filesystem::path& dir) {
  const std::filesystem::path file = file_in_the_way(dir);
  if (file.empty()) return;
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  if (file == dir) {
    std::fprintf(stderr,
                 "cubby: warning: the store %s (CUBBY_DIR or --dir) is a file, not a folder: "
                 "nothing is cached; point CUBBY_DIR at a folder, or move the file away\n",
                 dir.c_str());
  } else {
    std::fprintf(stderr,
                 "cubby: warning: the store %s (CUBBY_DIR or --dir) cannot be made: %s is a file, "
                 "not a folder: nothing is cached; point CUBBY_DIR at a folder, or move the file "
                 "away\n",
                 dir.c_str(), file.c_str());
  }
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
  constexpr const char* kExpected =
      "expected a size such as 500M, 1.5G, 64Mi or a number of bytes (k, M, G, T: powers of "
      "1000; Ki, Mi, Gi, Ti: powers of 1024)";
  std::string_view t = text;
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!t.empty() && space(t.front())) t.remove_prefix(1);
  while (!t.empty() && space(t.back())) t.remove_suffix(1);
  // The number: digits, optionally a fraction (kept as digits and a count of them).
  std::uint64_t whole = 0;
  std::uint64_t fraction = 0;
  std::uint64_t fraction_scale = 1;
  std::size_t digits = 0;
  std::size_t at = 0;
  for (; at < t.size() && std::isdigit(static_cast<unsigned char>(t[at])); ++at, ++digits) {
    if (__builtin_mul_overflow(whole, 10u, &whole) ||
        __builtin_add_overflow(whole, static_cast<unsigned>(t[at] - '0'), &whole)) {
      return fail(Errc::invalid_argument, "size is too large (at most 16 EiB)");
    }
  }
  if (at < t.size() && t[at] == '.') {
    for (++at; at < t.size() && std::isdigit(static_cast<unsigned char>(t[at])); ++at, ++digits) {
      if (fraction_scale >= 1'000'000) continue;  // digits past the sixth are dropped
      fraction = fraction * 10 + static_cast<std::uint64_t>(t[at] - '0');
      fraction_scale *= 10;
    }
  }
  if (digits == 0) return fail(Errc::invalid_argument, kExpected);
  while (at < t.size() && space(t[at])) ++at;
  // The unit: ccache's k, M, G, T (decimal) and Ki, Mi, Gi, Ti (binary), and P, E, Pi, Ei past
  // them, any case, each with an optional B; a bare B or nothing is bytes.
  std::string unit = lower(t.substr(at));
  if (unit.ends_with("b")) unit.pop_back();
  std::uint64_t scale = 1;
  if (!unit.empty()) {
    const bool binary = unit.size() == 2 && unit[1] == 'i';
    if (unit.size() != 1 && !binary) return fail(Errc::invalid_argument, kExpected);
    const std::size_t power = std::string_view("kmgtpe").find(unit[0]);
    if (power == std::string_view::npos) return fail(Errc::invalid_argument, kExpected);
    for (std::size_t i = 0; i <= power; ++i) scale *= binary ? 1024 : 1000;
  }
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(whole, scale, &bytes)) {
    return fail(Errc::invalid_argument, "size is too large (at most 16 EiB)");
  }
  if (scale == 1 && fraction != 0) {
    return fail(Errc::invalid_argument, "a number of bytes has no fraction; ", kExpected);
  }
  // fraction / fraction_scale of `scale`, rounded down to whole bytes (scale <= 2^60 and
  // fraction < fraction_scale <= 10^6: both products fit in 64 bits).
  const std::uint64_t part =
      scale / fraction_scale * fraction + (scale % fraction_scale) * fraction / fraction_scale;
  if (__builtin_add_overflow(bytes, part, &bytes)) {
    return fail(Errc::invalid_argument, "size is too large (at most 16 EiB)");
  }
  return bytes;
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
    if (*count > kMaxMemoryEntries) {
      return bad_variable("CUBBY_MEMORY_ENTRIES", value,
                          fail(Errc::invalid_argument, "at most ",
                               std::to_string(kMaxMemoryEntries), " entries are allowed"));
    }
    config.memory_entries = static_cast<std::size_t>(*count);
  }
  return {};
}

}  // namespace

Result<Config> Config::from_env() { return load({}); }

Result<Config> Config::load(const std::filesystem::path& dir) {
  Config config;
  config.dir = dir.empty() ? default_store_dir() : dir;
  warn_if_store_is_a_file(config.dir);
  // The store's settings: the variable over <dir>/cubby.conf over the default.
  // A bad line of the store's file is the store's problem, not this process's: like an unwritable
  // store, it is warned about once and the setting keeps its default (a bad variable is an error).
  std::vector<std::string> problems;
  auto settings = effective_settings(config.dir, &problems);
  if (!settings) return settings.error();
  for (const std::string& problem : problems) warn_store_file_once(problem);
  std::vector<const EffectiveSetting*> ignored;
  for (const EffectiveSetting& setting : *settings) {
    if (!setting.untrusted_because.empty()) ignored.push_back(&setting);
  }
  warn_untrusted_store_file_once(store_config_path(config.dir), ignored);
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
