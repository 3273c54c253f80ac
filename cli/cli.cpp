#include "cli.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <utility>

namespace cubby::cli {

[[noreturn]] void fail_with(int exit_code, std::string message) {
  throw CliFailure{exit_code, std::move(message)};
}

void add_common(CLI::App& command, Common& common) {
  command
      .add_option("--dir", common.dir,
                  "Store folder (default: $CUBBY_DIR, else $XDG_CACHE_HOME/cubby, else "
                  "~/.cache/cubby)")
      ->type_name("DIR");
  command.add_flag("--json", common.json, "Print the result as one JSON document");
}

// The settings from CUBBY_* variables, with --dir applied.
Config load_config(const Common& common) {
  auto config = Config::from_env();
  if (!config) fail_with(kExitUsage, config.error().message);
  if (!common.dir.empty()) config->dir = common.dir;
  return std::move(config).value();
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
std::string format_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  value /= 1024.0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

std::string format_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", ms);
  return text;
}

double compile_ms_of(const Entry& entry) { return static_cast<double>(entry.compile_us) / 1000.0; }

// Reads a whole input file; usage error (exit 2) if it cannot be read.
std::string read_input(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    fail_with(kExitUsage, "cannot read " + path + ": no such file; pass the path of a .cu file");
  }
  if (fs::is_directory(status)) {
    fail_with(kExitUsage, "cannot read " + path + ": it is a folder; pass the path of a .cu file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fail_with(kExitUsage, "cannot read " + path + ": " + std::strerror(errno) +
                              "; check the path and its permissions");
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    fail_with(kExitUsage, "cannot read " + path + ": read error; check the file and try again");
  }
  return text;
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

std::vector<DiskEntryInfo> list_entries(const DiskTier& disk, NonRegular non_regular) {
  std::vector<DiskEntryInfo> entries;
  auto listed =
      disk.list([&](const DiskEntryInfo& info) { entries.push_back(info); }, {}, non_regular);
  if (!listed) fail_with(kExitFailed, listed.error().message);
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.key < b.key; });
  return entries;
}

}  // namespace cubby::cli
