// `cubby`: the admin tool of a cubby store (compile through the cache, list, show, clear).
//
// Contract: results go to stdout (one JSON document with --json), messages to stderr. Exit codes:
// 0 success, 1 the operation failed, 2 usage error (bad arguments, unreadable input file).
// Errors are sentences that say what happened and what to do; no exception type is ever printed.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cubby/cache.hpp"
#include "cubby/config.hpp"
#include "cubby/entry.hpp"
#include "cubby/error.hpp"
#include "cubby/key.hpp"
#include "cubby/nvrtc.hpp"
#include "cubby/storage/disk.hpp"
#include "cubby/version.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

// A failure the tool reports: a sentence for stderr and the exit code.
struct CliFailure {
  int exit_code;
  std::string message;
};

[[noreturn]] void fail_with(int exit_code, std::string message) {
  throw CliFailure{exit_code, std::move(message)};
}

// Options every subcommand takes.
struct Common {
  std::string dir;
  bool json = false;
};

void add_common(CLI::App& command, Common& common) {
  command.add_option("--dir", common.dir,
                     "Store folder (default: $CUBBY_DIR, else $XDG_CACHE_HOME/cubby, else "
                     "~/.cache/cubby)")
      ->type_name("DIR");
  command.add_flag("--json", common.json, "Print the result as one JSON document");
}

// The settings from CUBBY_* variables, with --dir applied.
cubby::Config load_config(const Common& common) {
  auto config = cubby::Config::from_env();
  if (!config) fail_with(kExitUsage, config.error().message);
  if (!common.dir.empty()) config->dir = common.dir;
  return std::move(config).value();
}

void print_json(const json& document) { std::cout << document.dump(2) << '\n'; }

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

double compile_ms_of(const cubby::Entry& entry) {
  return static_cast<double>(entry.compile_us) / 1000.0;
}

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

json names_json(const cubby::Entry& entry) {
  json names = json::object();
  for (const auto& [expression, lowered] : entry.lowered_names) names[expression] = lowered;
  return names;
}

// ---- compile -----------------------------------------------------------------------------------

struct CompileArgs {
  std::string file;
  std::vector<std::string> name_expressions;
  std::vector<std::string> options;
  std::string arch;
  std::string program_name;
  std::string cubin_out;
  bool explain = false;
};

int run_compile(const Common& common, const CompileArgs& args) {
  cubby::CompileRequest request;
  request.source = read_input(args.file);
  const fs::path file(args.file);
  request.program_name = args.program_name.empty() ? file.filename().string() : args.program_name;
  std::error_code ec;
  const fs::path absolute = fs::absolute(file, ec);
  request.source_dir = ec ? file.parent_path() : absolute.parent_path();
  request.name_expressions = args.name_expressions;
  request.options = args.options;
  request.arch = args.arch;

  cubby::Cache cache(load_config(common));

  json explain = json::array();
  if (args.explain) {
    for (const auto& field : cubby::explain_key(cache.key_inputs(request))) {
      explain.push_back({{"label", field.label}, {"summary", field.summary}, {"hash", field.hash}});
    }
    if (!common.json) {
      std::size_t width = 0;
      for (const auto& field : explain) width = std::max(width, field["label"].get<std::string>().size());
      std::cout << "key fields (hash, label, value):\n";
      for (const auto& field : explain) {
        std::cout << "  " << field["hash"].get<std::string>() << "  " << std::left
                  << std::setw(static_cast<int>(width)) << field["label"].get<std::string>()
                  << std::right << "  " << field["summary"].get<std::string>() << '\n';
      }
    }
  }

  cubby::CacheResult result;
  try {
    result = cache.compile(request);
  } catch (const cubby::Error& error) {
    if (error.code() != cubby::Errc::compile_failed) throw;
    std::string message = error.what();
    if (!message.empty() && message.back() != '\n') message += '\n';
    fail_with(kExitFailed, message + "Fix the errors above and run `cubby compile` again; nothing was stored.");
  }
  const cubby::Entry& entry = *result.entry;
  if (!args.cubin_out.empty()) write_output(args.cubin_out, entry.payload);

  if (common.json) {
    json out = {
        {"key", result.key.hex()},
        {"hit", result.hit},
        {"tier", cubby::source_name(result.tier)},
        {"lowered_names", names_json(entry)},
        {"cubin_bytes", entry.payload.size()},
        {"payload_kind", cubby::payload_kind_name(entry.kind)},
        {"compile_ms", compile_ms_of(entry)},
        {"elapsed_ms", result.elapsed_ms},
        {"log", entry.log},
        {"program_name", request.program_name},
        {"arch", request.arch.empty() ? cache.default_arch() : request.arch},
        {"dir", cache.config().dir.string()},
    };
    if (!args.cubin_out.empty()) out["cubin_out"] = args.cubin_out;
    if (args.explain) out["explain"] = explain;
    print_json(out);
    return kExitOk;
  }

  std::cout << "key      " << result.key.hex() << '\n';
  std::cout << "result   "
            << (result.hit ? std::string("hit (") + cubby::source_name(result.tier) + ")"
                           : std::string("compiled"))
            << '\n';
  std::cout << "payload  " << cubby::payload_kind_name(entry.kind) << ", "
            << format_bytes(entry.payload.size()) << '\n';
  std::cout << "compile  " << format_ms(compile_ms_of(entry)) << " (original compile)\n";
  std::cout << "elapsed  " << format_ms(result.elapsed_ms) << " (this call)\n";
  if (!entry.lowered_names.empty()) {
    std::cout << "names\n";
    for (const auto& [expression, lowered] : entry.lowered_names) {
      std::cout << "  " << expression << " -> " << lowered << '\n';
    }
  }
  if (!entry.log.empty()) std::cout << "log\n" << entry.log << (entry.log.back() == '\n' ? "" : "\n");
  if (!args.cubin_out.empty()) std::cout << "wrote    " << args.cubin_out << '\n';
  return kExitOk;
}

// ---- stats / ls / show / clear -----------------------------------------------------------------

std::vector<cubby::DiskEntryInfo> list_entries(const cubby::DiskTier& disk) {
  std::vector<cubby::DiskEntryInfo> entries;
  auto listed = disk.list([&](const cubby::DiskEntryInfo& info) { entries.push_back(info); });
  if (!listed) fail_with(kExitFailed, listed.error().message);
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.key < b.key; });
  return entries;
}

int run_stats(const Common& common) {
  const cubby::Config config = load_config(common);
  cubby::DiskTier disk(config.dir);
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  for (const auto& info : list_entries(disk)) {
    ++count;
    bytes += info.bytes;
  }
  if (common.json) {
    print_json({{"dir", config.dir.string()}, {"entries", count}, {"bytes", bytes}});
    return kExitOk;
  }
  std::cout << "store    " << config.dir.string() << '\n';
  std::cout << "entries  " << count << '\n';
  std::cout << "bytes    " << bytes << " (" << format_bytes(bytes) << ")\n";
  return kExitOk;
}

int run_ls(const Common& common) {
  const cubby::Config config = load_config(common);
  cubby::DiskTier disk(config.dir);
  json rows = json::array();
  for (const auto& info : list_entries(disk)) {
    const std::int64_t modified_ms = unix_ms_of(info.modified);
    json row = {{"key", info.key.hex()},
                {"bytes", info.bytes},
                {"modified", format_unix_ms(modified_ms)},
                {"modified_ms", modified_ms}};
    auto bytes = disk.get(info.key);
    if (!bytes || !bytes->has_value()) {
      row["status"] = "unreadable";
      row["error"] = bytes ? std::string("the entry vanished while listing") : bytes.error().message;
    } else if (auto entry = cubby::decode_entry(**bytes); !entry) {
      row["status"] = "corrupt";
      row["error"] = entry.error().message;
    } else {
      row["status"] = "ok";
      row["kind"] = cubby::payload_kind_name(entry->kind);
      row["names"] = entry->lowered_names.size();
      row["compile_ms"] = compile_ms_of(*entry);
    }
    rows.push_back(std::move(row));
  }
  if (common.json) {
    print_json(rows);
    return kExitOk;
  }
  if (rows.empty()) {
    std::cerr << "no entries in " << config.dir.string() << '\n';
    return kExitOk;
  }
  for (const auto& row : rows) {
    std::cout << row["key"].get<std::string>() << "  " << std::setw(10)
              << format_bytes(row["bytes"].get<std::uint64_t>()) << "  "
              << row["modified"].get<std::string>() << "  ";
    if (row["status"] == "ok") {
      std::cout << row["kind"].get<std::string>() << "  " << row["names"].get<std::size_t>()
                << " names\n";
    } else {
      std::cout << row["status"].get<std::string>() << " (" << row["error"].get<std::string>()
                << ")\n";
    }
  }
  return kExitOk;
}

int run_show(const Common& common, const std::string& key_text, const std::string& cubin_out) {
  auto key = cubby::Key::parse(key_text);
  if (!key) {
    fail_with(kExitUsage, "'" + key_text + "' is not a key: a key is 32 hex digits (see `cubby ls`)");
  }
  const cubby::Config config = load_config(common);
  cubby::DiskTier disk(config.dir);
  auto bytes = disk.get(*key);
  if (!bytes) fail_with(kExitFailed, bytes.error().message);
  if (!bytes->has_value()) {
    fail_with(kExitFailed,
              "no entry " + key->hex() + " in " + config.dir.string() + " (see `cubby ls`)");
  }
  auto entry = cubby::decode_entry(**bytes);
  if (!entry) {
    fail_with(kExitFailed, "entry " + key->hex() + " in " + config.dir.string() + " is corrupt (" +
                               entry.error().message +
                               "); remove it with `cubby clear` (or `cubby verify --fix` once "
                               "available); it will be recompiled on next use");
  }
  if (!cubin_out.empty()) write_output(cubin_out, entry->payload);

  if (common.json) {
    json out = {{"key", key->hex()},
                {"path", disk.path_of(*key).string()},
                {"bytes", (*bytes)->size()},
                {"kind", cubby::payload_kind_name(entry->kind)},
                {"payload_bytes", entry->payload.size()},
                {"created", format_unix_ms(entry->created_ms)},
                {"created_ms", entry->created_ms},
                {"compile_ms", compile_ms_of(*entry)},
                {"options", entry->options},
                {"log", entry->log},
                {"lowered_names", names_json(*entry)}};
    if (!cubin_out.empty()) out["cubin_out"] = cubin_out;
    print_json(out);
    return kExitOk;
  }
  std::cout << "key      " << key->hex() << '\n';
  std::cout << "path     " << disk.path_of(*key).string() << '\n';
  std::cout << "payload  " << cubby::payload_kind_name(entry->kind) << ", "
            << format_bytes(entry->payload.size()) << '\n';
  std::cout << "created  " << format_unix_ms(entry->created_ms) << '\n';
  std::cout << "compile  " << format_ms(compile_ms_of(*entry)) << '\n';
  std::cout << "options ";
  if (entry->options.empty()) std::cout << " (none)";
  for (const auto& option : entry->options) std::cout << ' ' << option;
  std::cout << '\n';
  std::cout << "names    " << entry->lowered_names.size() << '\n';
  for (const auto& [expression, lowered] : entry->lowered_names) {
    std::cout << "  " << expression << " -> " << lowered << '\n';
  }
  if (entry->log.empty()) {
    std::cout << "log      (empty)\n";
  } else {
    std::cout << "log\n" << entry->log << (entry->log.back() == '\n' ? "" : "\n");
  }
  if (!cubin_out.empty()) std::cout << "wrote    " << cubin_out << '\n';
  return kExitOk;
}

int run_clear(const Common& common) {
  const cubby::Config config = load_config(common);
  cubby::DiskTier disk(config.dir);
  auto removed = disk.clear();
  if (!removed) fail_with(kExitFailed, removed.error().message);
  if (common.json) {
    print_json({{"dir", config.dir.string()}, {"removed", *removed}});
  } else {
    std::cout << "removed " << *removed << (*removed == 1 ? " entry" : " entries") << " from "
              << config.dir.string() << '\n';
  }
  return kExitOk;
}

void report(const std::string& message) {
  std::cerr << "cubby: " << message << (message.empty() || message.back() != '\n' ? "\n" : "");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cubby: a persistent, shared CUBIN cache for kernels compiled with NVRTC.", "cubby"};
  app.set_version_flag("--version", std::string("cubby ") + cubby::kVersion);
  app.require_subcommand(1);

  Common common;

  CompileArgs compile_args;
  CLI::App* compile = app.add_subcommand("compile", "Compile a .cu file through the cache");
  compile->add_option("FILE", compile_args.file, "CUDA source file")->required();
  compile->add_option("--name-expr", compile_args.name_expressions,
                      "Name expression whose lowered name to capture (repeatable)")
      ->allow_extra_args(false)
      ->type_name("E");
  compile->add_option("--option", compile_args.options, "NVRTC option (repeatable)")
      ->allow_extra_args(false)
      ->type_name("O");
  compile->add_option("--arch", compile_args.arch,
                      "Target architecture, e.g. sm_90 (default: $CUBBY_ARCH, GPU 0, else sm_90)")
      ->type_name("sm_XX");
  compile->add_option("--program-name", compile_args.program_name,
                      "NVRTC program name (default: the file's name)")
      ->type_name("N");
  compile->add_option("--cubin-out", compile_args.cubin_out, "Write the payload to FILE")
      ->type_name("FILE");
  compile->add_flag("--explain", compile_args.explain, "Print every key field with its hash");
  add_common(*compile, common);

  CLI::App* stats = app.add_subcommand("stats", "Entries and bytes in the store");
  add_common(*stats, common);

  CLI::App* ls = app.add_subcommand("ls", "List the entries of the store");
  add_common(*ls, common);

  std::string show_key;
  std::string show_cubin_out;
  CLI::App* show = app.add_subcommand("show", "Decode one entry");
  show->add_option("KEY", show_key, "Entry key (32 hex digits, see `cubby ls`)")->required();
  show->add_option("--cubin-out", show_cubin_out, "Write the payload to FILE")->type_name("FILE");
  add_common(*show, common);

  CLI::App* clear = app.add_subcommand("clear", "Remove every entry of the store");
  add_common(*clear, common);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? kExitOk : kExitUsage;
  }

  try {
    if (*compile) return run_compile(common, compile_args);
    if (*stats) return run_stats(common);
    if (*ls) return run_ls(common);
    if (*show) return run_show(common, show_key, show_cubin_out);
    if (*clear) return run_clear(common);
    report("no command given; run `cubby --help` for the list of commands");
    return kExitUsage;
  } catch (const CliFailure& failure) {
    report(failure.message);
    return failure.exit_code;
  } catch (const cubby::Error& error) {
    report(error.what());
    return error.code() == cubby::Errc::invalid_argument ? kExitUsage : kExitFailed;
  } catch (const std::bad_alloc&) {
    report("out of memory; free memory and try again");
    return kExitFailed;
  } catch (const std::exception& error) {
    report(std::string("internal error: ") + error.what() + " (please report this at the cubby issue tracker)");
    return kExitFailed;
  } catch (...) {
    report("internal error (please report this at the cubby issue tracker)");
    return kExitFailed;
  }
}
