// Shared parts of the `cubby` tool: exit codes, failures, common options, output helpers, and
// the command registry. Each command lives in its own cli/<command>.cpp and registers itself in
// main.cpp through an `add_<command>` function declared at the bottom of this header.
//
// Contract: results go to stdout (one JSON document with --json), messages to stderr. Exit codes:
// 0 success, 1 the operation failed, 2 usage error (bad arguments, unreadable input file).
// Errors are sentences that say what happened and what to do; no exception type is ever printed.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cubby/config.hpp"
#include "cubby/entry.hpp"
#include "storage/local/disk.hpp"

namespace cubby::cli {

namespace fs = std::filesystem;
using nlohmann::json;

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

// A failure the tool reports: a sentence for stderr and the exit code.
struct CliFailure {
  int exit_code;
  std::string message;
};

// Throws CliFailure; main() prints the message and exits with the code.
[[noreturn]] void fail_with(int exit_code, std::string message);

// Options every subcommand takes.
struct Common {
  std::string dir;
  bool json = false;
};

// Adds --dir and --json to `command`.
void add_common(CLI::App& command, Common& common);

// The settings from CUBBY_* variables, with --dir applied; usage failure on a bad variable.
Config load_config(const Common& common);

// Prints `document` (indented) and a newline to stdout. Never fails on content: strings holding
// bytes that are not UTF-8 (paths, program names, options, logs) are printed with each invalid
// byte replaced by U+FFFD (lossy, but valid JSON for every parser; the human output prints the
// bytes as they are, and keys name entries losslessly).
void print_json(const json& document);

// "2024-05-01T12:34:56Z" for Unix milliseconds.
std::string format_unix_ms(std::int64_t unix_ms);
std::int64_t unix_ms_of(fs::file_time_type time);
// "1.5 MiB", "312 B".
std::string format_bytes(std::uint64_t bytes);
// "12.3 ms".
std::string format_ms(double ms);
double compile_ms_of(const Entry& entry);

// Reads a whole input file; usage failure (exit 2) if it cannot be read.
std::string read_input(const std::string& path);
// Writes bytes to `path` (--cubin-out); operation failure (exit 1) if it cannot.
void write_output(const std::string& path, const std::string& bytes);

// {expression: lowered name} of an entry.
json names_json(const Entry& entry);

// Every entry file of the store (with NonRegular::include, non-regular files at entry paths too),
// sorted by key; operation failure if the store cannot be listed.
std::vector<DiskEntryInfo> list_entries(const DiskTier& disk,
                                        NonRegular non_regular = NonRegular::skip);

// A registered subcommand: its parsed CLI11 app and what runs it (returns the exit code).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// One per command file (cli/<command>.cpp): adds the subcommand to `app` (options bound to
// storage the function owns) and returns it. `common` is shared by all subcommands.
Command add_compile(CLI::App& app, Common& common);
Command add_stats(CLI::App& app, Common& common);
Command add_ls(CLI::App& app, Common& common);
Command add_show(CLI::App& app, Common& common);
Command add_clear(CLI::App& app, Common& common);
Command add_verify(CLI::App& app, Common& common);
Command add_gc(CLI::App& app, Common& common);
Command add_export(CLI::App& app, Common& common);
Command add_import(CLI::App& app, Common& common);
Command add_recover(CLI::App& app, Common& common);
Command add_warm(CLI::App& app, Common& common);

}  // namespace cubby::cli
