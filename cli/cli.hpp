// Shared parts of the `cubby` tool: exit codes, failures, common options, output helpers, and
// the command registry. Each command lives in its own cli/<command>.cpp, with an `add_<command>`
// function declared at the bottom of this header, and is registered by a line in
// register_commands (cli/registry.cpp). Commands work on a store through the store module
// (store/store.hpp and the store/ headers beside it) and the public headers only.
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
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/config.hpp"
#include "cubby/entry.hpp"
#include "store/store.hpp"

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

// CLI11's App::add_subcommand, add_option and add_flag, with the same arguments and results, out
// of line (cli.cpp). CLI11 is header-only: clang-tidy's static analyzer would explore its option
// machinery in every function that registers an option, about 7 s of lint per command unit;
// behind these calls it is explored once, and each command's unit compiles less. add_option is
// instantiated in cli.cpp for the value types the commands use: std::string, its vector and
// optional, double, unsigned and long (another type is a link error: add it there).
CLI::App* add_command(CLI::App& app, const std::string& name, const std::string& description);
template <typename T>
CLI::Option* add_option(CLI::App& command, const std::string& name, T& value,
                        const std::string& description);
CLI::Option* add_flag(CLI::App& command, const std::string& name, bool& value,
                      const std::string& description);

// The settings of the store --dir (else CUBBY_DIR, else the default) names: CUBBY_* variables,
// then the store's cubby.conf, then defaults (Config::load); usage failure on a bad value.
Config load_config(const Common& common);

// Usage failure when the store is read-only (CUBBY_READ_ONLY, or read_only in its cubby.conf),
// saying where to change that and that `what` ("run gc") needs a writable store.
void require_writable(const Config& config, const std::string& what);

// Prints `document` (indented) and a newline to stdout. Never fails on content: strings holding
// bytes that are not UTF-8 (paths, program names, options, logs) are printed with each invalid
// byte replaced by U+FFFD (lossy, but valid JSON for every parser; the human output prints the
// bytes as they are, and keys name entries losslessly).
void print_json(const json& document);

// "2024-05-01T12:34:56Z" for Unix milliseconds.
std::string format_unix_ms(std::int64_t unix_ms);
std::int64_t unix_ms_of(fs::file_time_type time);
// How sizes are shown: powers of 1024 (KiB, MiB, GiB, TiB) or of 1000 (kB, MB, GB, TB).
enum class SizeUnits : std::uint8_t { binary, decimal };
// The units of a size as written (max_size, -M): decimal for k, M, G, T, P, E (as ccache reads
// them); binary for Ki ... Ei, bytes, and a number without a unit (GiB, as in ccache). ccache
// shows sizes in the units its max_size is written in, and so does the tool.
SizeUnits size_units_of(std::string_view size_text);
// The units of the store's max_size as it takes effect (variable, cubby.conf, default), the ones
// `cubby stats` and `cubby gc` show sizes in.
SizeUnits store_size_units(const Config& config);
// "powers of 1024 (KiB, MiB, GiB)", "powers of 1000 (kB, MB, GB)": the units said once.
std::string units_text(SizeUnits units);
// "1.5 MiB" (binary) or "1.6 MB" (decimal), "312 B"; "unlimited" for kUnlimitedMaxSize (a store
// bound of 0) or more.
std::string format_bytes(std::uint64_t bytes, SizeUnits units = SizeUnits::binary);
// A store bound as --json prints it: 0 for unlimited (as the setting spells it), else bytes.
inline std::uint64_t json_max_size(std::uint64_t bytes) {
  return bytes >= kUnlimitedMaxSize ? 0 : bytes;
}
// "1 name", "2 names", "1 worker process", "3 worker processes": `count` and `noun`, plural
// when count != 1 ("-es" after a final "s").
std::string count_of(std::uint64_t count, std::string_view noun);
// "12.3 ms".
std::string format_ms(double ms);
// `ms` rounded to whole microseconds (3 decimals), for JSON: a sum or a clock difference prints
// as 975.434, never as 975.43399999999997.
double rounded_ms(double ms);
double compile_ms_of(const Entry& entry);

// A CLI11 check for a number option: finite, at least `min` (more than `min` when `min_excluded`)
// and at most `max`. CLI::Range and CLI::PositiveNumber let NaN through, and a bound of 1e308
// overflows whatever the value is turned into; this refuses both with a usage error (exit 2)
// that names the range. It adds nothing to the option's help: say the range there.
CLI::Validator finite_number(double min, double max, bool min_excluded = false);

// Reads a whole input file, links followed; usage failure (exit 2) if it cannot be read, or is
// not a regular file (a FIFO, /dev/zero: never a hang or an unbounded read), or is over
// io::kMaxReadBytes.
std::string read_input(const std::string& path);
// Writes bytes to `path` (--cubin-out); operation failure (exit 1) if it cannot.
void write_output(const std::string& path, const std::string& bytes);

// {expression: lowered name} of an entry.
json names_json(const Entry& entry);

// Every entry file of the store (with NonRegular::include, non-regular files at entry paths too),
// sorted by key; operation failure if the store cannot be listed.
std::vector<DiskEntryInfo> list_entries(const Store& store,
                                        NonRegular non_regular = NonRegular::skip);

// The key `text` names in `store`: 32 hex digits, or a unique prefix of at least kMinKeyPrefix hex
// digits of a stored entry's key (either case). Usage failure for text that is not hex or too
// short, and for a prefix several keys share (the candidates listed); operation failure when no
// entry starts with it.
inline constexpr std::size_t kMinKeyPrefix = 4;
Key resolve_key(const Store& store, const std::string& text);

// A registered subcommand: its parsed CLI11 app and what runs it (returns the exit code).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// The registry (cli/registry.cpp): adds --version, the global --dir/--json and every command to
// `app`, in `cubby --help`'s order; returns the commands.
std::vector<Command> register_commands(CLI::App& app, Common& common);
// The command lines argv stands for. ccache's options (before any command word; --dir and --json
// may come first, and are given to each command) become the commands they stand for, in order:
// -s/--show-stats (stats), -z/--zero-stats (stats --zero), -C/--clear (clear), -p/--show-config
// (config), -M/--max-size SIZE (persisted: `config max_size SIZE`), --evict-older-than AGE
// (`gc --older-than AGE`). Short ones may be bundled as with getopt (-sz: show, then zero; a value
// option ends a bundle: -sM5G); other arguments after one go to its command (-s --json). Usage
// failure for an unknown letter in a bundle or a missing value. Without a ccache option: argv.
std::vector<std::vector<std::string>> expand_ccache_options(int argc, char** argv);
// "ccache's short options cubby knows are -s, -z, ... (`cubby --help` lists them ...)": the hint
// of an unknown option's message.
std::string ccache_short_options_hint();
// The "For ccache users" table of `cubby --help` and the man page.
std::string ccache_options_text();
// The commands `cubby --help` lists (the registry's, less hidden ones), in its order.
std::vector<const CLI::App*> visible_commands(const CLI::App& app);
// Usage failure (exit 2) naming an unknown option before the command word (the tool's own are
// --dir and --json), or an unknown command word, with the list of commands (and the closest
// one), or saying that none was given; returns when the word is a command or when
// --help, --version or --generate make a command unnecessary.
void check_command_word(const CLI::App& app, int argc, char** argv);

// The man page (troff, man(7)) and the bash completion script of `cubby`, from the registry
// (cli/docs.cpp): every command with its description, options and footer. Return an exit code.
int write_man_page(const CLI::App& app, std::ostream& out);
int write_bash_completion(const CLI::App& app, std::ostream& out);

// One per command file (cli/<command>.cpp): adds the subcommand to `app` (options bound to
// storage the function owns) and returns it. `common` is shared by all subcommands.
Command add_compile(CLI::App& app, Common& common);
Command add_stats(CLI::App& app, Common& common);
Command add_ls(CLI::App& app, Common& common);
Command add_show(CLI::App& app, Common& common);
Command add_config(CLI::App& app, Common& common);
Command add_clear(CLI::App& app, Common& common);
Command add_verify(CLI::App& app, Common& common);
Command add_gc(CLI::App& app, Common& common);
Command add_export(CLI::App& app, Common& common);
Command add_import(CLI::App& app, Common& common);
Command add_recover(CLI::App& app, Common& common);
Command add_warm(CLI::App& app, Common& common);

}  // namespace cubby::cli
