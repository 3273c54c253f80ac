#include "cli.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <utility>

#include "config/store_config.hpp"
#include "util/io.hpp"

namespace cubby::cli {

[[noreturn]] void fail_with(int exit_code, std::string message) {
  throw CliFailure{exit_code, std::move(message)};
}

void add_common(CLI::App& command, Common& common) {
  add_option(command, "--dir", common.dir,
             "Store folder (default: $CUBBY_DIR, else $XDG_CACHE_HOME/cubby, else "
             "~/.cache/cubby)")
      ->type_name("DIR");
  add_flag(command, "--json", common.json, "Print the result as one JSON document");
}

CLI::App* add_command(CLI::App& app, const std::string& name, const std::string& description) {
  return app.add_subcommand(name, description);
}

template <typename T>
CLI::Option* add_option(CLI::App& command, const std::string& name, T& value,
                        const std::string& description) {
  return command.add_option(name, value, description);
}

template CLI::Option* add_option(CLI::App&, const std::string&, std::string&, const std::string&);
template CLI::Option* add_option(CLI::App&, const std::string&, std::vector<std::string>&,
                                 const std::string&);
template CLI::Option* add_option(CLI::App&, const std::string&, std::optional<std::string>&,
                                 const std::string&);
template CLI::Option* add_option(CLI::App&, const std::string&, double&, const std::string&);
template CLI::Option* add_option(CLI::App&, const std::string&, unsigned&, const std::string&);
template CLI::Option* add_option(CLI::App&, const std::string&, long&, const std::string&);

CLI::Option* add_flag(CLI::App& command, const std::string& name, bool& value,
                      const std::string& description) {
  return command.add_flag(name, value, description);
}

// The settings of the store --dir (else the default) names: variables, its cubby.conf, defaults.
Config load_config(const Common& common) {
  auto config = Config::load(common.dir);
  if (!config) fail_with(kExitUsage, config.error().message);
  return std::move(config).value();
}

void require_writable(const Config& config, const std::string& what) {
  if (!config.read_only) return;
  fail_with(kExitUsage, "the store is read-only (CUBBY_READ_ONLY, or read_only in " +
                            (config.dir / "cubby.conf").string() +
                            ": see `cubby config read_only`); make it writable to " + what);
}

// error_handler_t::replace: invalid UTF-8 becomes U+FFFD instead of an exception (see cli.hpp).
void print_json(const json& document) {
  std::cout << document.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

// "2024-05-01T12:34:56Z" for Unix milliseconds.
std::string format_unix_ms(std::int64_t unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm parts{};
  if (gmtime_r(&seconds, &parts) == nullptr) return "?";
  char text[32];
  const std::size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return length == 0 ? std::string("?") : std::string(text, length);
}

std::int64_t unix_ms_of(fs::file_time_type time) {
  const auto system = std::chrono::file_clock::to_sys(time);
  return std::chrono::duration_cast<std::chrono::milliseconds>(system.time_since_epoch()).count();
}

// "1.5 MiB", "312 B".
std::string count_of(std::uint64_t count, std::string_view noun) {
  std::string text = std::to_string(count) + " " + std::string(noun);
  if (count != 1) text += noun.ends_with("s") ? "es" : "s";
  return text;
}

SizeUnits size_units_of(std::string_view size_text) {
  std::string unit;
  for (const char c : size_text) {
    if (std::isalpha(static_cast<unsigned char>(c)) != 0) {
      unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  if (unit.ends_with("b")) unit.pop_back();
  return unit.size() == 1 ? SizeUnits::decimal : SizeUnits::binary;
}

SizeUnits store_size_units(const Config& config) {
  auto settings = effective_settings(config.dir);
  if (!settings) return SizeUnits::binary;
  for (const EffectiveSetting& setting : *settings) {
    if (setting.info->key == "max_size") return size_units_of(setting.value);
  }
  return SizeUnits::binary;
}

std::string units_text(SizeUnits units) {
  return units == SizeUnits::decimal ? "powers of 1000 (kB, MB, GB)"
                                     : "powers of 1024 (KiB, MiB, GiB)";
}

std::string format_bytes(std::uint64_t bytes, SizeUnits units) {
  if (bytes >= kUnlimitedMaxSize) return "unlimited";
  const double step = units == SizeUnits::decimal ? 1000.0 : 1024.0;
  if (static_cast<double>(bytes) < step) return std::to_string(bytes) + " B";
  static constexpr const char* kBinary[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  static constexpr const char* kDecimal[] = {"kB", "MB", "GB", "TB", "PB"};
  double value = static_cast<double>(bytes) / step;
  std::size_t unit = 0;
  while (value >= step && unit + 1 < std::size(kBinary)) {
    value /= step;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value,
                (units == SizeUnits::decimal ? kDecimal : kBinary)[unit]);
  return text;
}

std::string format_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", ms);
  return text;
}

double rounded_ms(double ms) { return std::round(ms * 1000.0) / 1000.0; }

double compile_ms_of(const Entry& entry) { return static_cast<double>(entry.compile_us) / 1000.0; }

CLI::Validator finite_number(double min, double max, bool min_excluded) {
  char range[96];
  std::snprintf(range, sizeof range, "%s %g and at most %g", min_excluded ? "over" : "at least",
                min, max);
  const std::string expected = std::string("expected a number ") + range;
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double value = std::strtod(text.c_str(), &end);
        const bool parsed = !text.empty() && end == text.c_str() + text.size() && errno == 0;
        if (!parsed || !std::isfinite(value) || value < min || (min_excluded && value <= min) ||
            value > max) {
          return "\"" + text + "\": " + expected;
        }
        return {};
      },
      "");  // the option's help says its range: "--timeout S", never "S:over 0 ..."
}

// Reads a whole input file; usage error (exit 2) if it cannot be read.
std::string read_input(const std::string& path) {
  // Followed links and all, `path` must be a regular file: /dev/zero would be read until memory
  // runs out, a FIFO would block. read_file checks the opened file again, and bounds the read.
  std::error_code ec;
  const fs::path resolved = fs::canonical(path, ec);
  struct stat info {};
  if (ec || ::stat(resolved.c_str(), &info) != 0) {
    fail_with(kExitUsage, "cannot read " + path + ": no such file; pass the path of a .cu file");
  }
  if (!S_ISREG(info.st_mode)) {
    fail_with(kExitUsage, "cannot read " + path + ": it is " + io::file_type_name(info.st_mode) +
                              ", not a regular file; pass the path of a .cu file");
  }
  auto text = io::read_file(resolved);
  if (!text) {
    fail_with(kExitUsage, "cannot read " + path + ": " + text.error().message);
  }
  return std::move(text).value();
}

// Writes a payload to `path` (--cubin-out); operation failure (exit 1) if it cannot.
void write_output(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (out) out.close();
  if (!out) {
    fail_with(kExitFailed, "cannot write " + path + ": " + std::strerror(errno) +
                               "; check that its folder exists and is writable");
  }
}

json names_json(const Entry& entry) {
  json names = json::object();
  for (const auto& [expression, lowered] : entry.lowered_names) names[expression] = lowered;
  return names;
}

Key resolve_key(const Store& store, const std::string& text) {
  if (text.size() == 32) {
    auto key = Key::parse(text);
    if (!key) fail_with(kExitUsage, key.error().message);
    return *key;
  }
  std::string prefix = text;
  for (char& c : prefix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (prefix.empty() || prefix.size() > 32 ||
      prefix.find_first_not_of("0123456789abcdef") != std::string::npos) {
    fail_with(kExitUsage, "'" + text +
                              "' is not a key: a key is 32 hex digits, or a unique prefix of "
                              "one (see `cubby ls`)");
  }
  if (prefix.size() < kMinKeyPrefix) {
    fail_with(kExitUsage, "key prefix '" + text + "' is too short: give at least " +
                              std::to_string(kMinKeyPrefix) + " hex digits (see `cubby ls`)");
  }
  auto listed = store.keys_with_prefix(prefix);
  if (!listed) fail_with(kExitFailed, listed.error().message);
  const std::vector<Key>& matches = *listed;
  if (matches.empty()) {
    fail_with(kExitFailed, "no entry's key starts with " + prefix + " in " + store.root().string() +
                               " (see `cubby ls`)");
  }
  if (matches.size() > 1) {
    std::string candidates;
    for (std::size_t i = 0; i < matches.size() && i < 10; ++i)
      candidates += "\n  " + matches[i].hex();
    if (matches.size() > 10) candidates += "\n  ...";
    fail_with(kExitUsage, "key prefix " + prefix +
                              " is ambiguous: " + std::to_string(matches.size()) +
                              " entries start with it; give more digits:" + candidates);
  }
  return matches.front();
}

std::vector<DiskEntryInfo> list_entries(const Store& store, NonRegular non_regular) {
  auto listed = store.entries(non_regular);
  if (!listed) fail_with(kExitFailed, listed.error().message);
  return std::move(listed).value();
}

}  // namespace cubby::cli
