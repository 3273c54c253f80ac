// `cubby gc [--max-size S] [--older-than D]`: removal of entries unused for longer than D, then
// least-recently-used eviction to the bound, leftover cleanup.
#include <cctype>
#include <chrono>
#include <iostream>
#include <optional>

#include "cli.hpp"
#include "config/store_config.hpp"

namespace cubby::cli {
namespace {

// The seconds of an age (--older-than, --evict-older-than): a number and its unit, s, m, h or d.
// As in ccache, a number without a unit is refused (was "7" seven seconds or seven days?).
std::uint64_t parse_age(const std::string& text) {
  constexpr const char* kForms = "give a number and its unit: 7d (days), 12h, 30m or 90s";
  auto age = parse_duration_s(text);
  if (!age)
    fail_with(kExitUsage,
              "the age \"" + text + "\" is not valid: " + age.error().message + "; " + kForms);
  if (!text.empty() && std::isdigit(static_cast<unsigned char>(text.back())) != 0) {
    fail_with(kExitUsage,
              "the age \"" + text + "\" has no unit (ccache refuses it too); " + kForms);
  }
  return *age;
}

struct GcArgs {
  std::string max_size;
  std::string older_than;
  double target = 1.0;
};

int run_gc(const Common& common, const GcArgs& args) {
  const Config config = load_config(common);
  require_writable(config, "run gc");
  GcOptions options;
  options.max_size = config.max_size;
  if (!args.max_size.empty()) {
    auto size = parse_max_size(args.max_size);  // 0: no bound (only --older-than removes)
    if (!size)
      fail_with(kExitUsage, "--max-size \"" + args.max_size + "\": " + size.error().message);
    options.max_size = *size;
  }
  options.target_ratio = args.target;
  Store store(config.dir);
  StoreUsage aged;
  std::optional<std::uint64_t> age;
  if (!args.older_than.empty()) {
    age = parse_age(args.older_than);
    auto removed =
        store.remove_older_than(fs::file_time_type::clock::now() - std::chrono::seconds(*age));
    if (!removed) fail_with(kExitFailed, removed.error().message);
    aged = *removed;
  }
  auto report = store.collect_garbage(options);
  if (!report) fail_with(kExitFailed, report.error().message);
  if (common.json) {
    print_json({{"dir", config.dir.string()},
                {"max_size", json_max_size(options.max_size)},
                {"configured_max_size", json_max_size(config.max_size)},
                {"older_than_s", age ? json(*age) : json(nullptr)},
                {"aged_out", aged.entries},
                {"aged_out_bytes", aged.bytes},
                {"entries_before", report->entries_before},
                {"bytes_before", report->bytes_before},
                {"evicted", report->evicted},
                {"evicted_bytes", report->evicted_bytes},
                {"entries", report->entries},
                {"bytes", report->bytes},
                {"temp_removed", report->temp_removed},
                {"locks_removed", report->locks_removed},
                {"non_regular_removed", report->non_regular_removed},
                {"pch_dirs_removed", report->pch_dirs_removed},
                {"pch_bytes_removed", report->pch_bytes_removed},
                {"elapsed_ms", rounded_ms(report->elapsed_ms)}});
    return kExitOk;
  }
  // Sizes in the units of the bound that applies (--max-size's, else the store's max_size's).
  const SizeUnits units =
      args.max_size.empty() ? store_size_units(config) : size_units_of(args.max_size);
  std::cout << "store     " << config.dir.string() << '\n';
  std::cout << "bound     " << format_bytes(options.max_size, units);
  if (options.max_size != config.max_size) {
    std::cout << " (this run only; the store's max_size stays "
              << format_bytes(config.max_size, units) << ": `cubby config max_size "
              << args.max_size << "` keeps it)";
  }
  std::cout << '\n';
  if (!args.older_than.empty()) {
    std::cout << "aged out  " << aged.entries << " entries, " << format_bytes(aged.bytes, units)
              << " (unused for more than " << args.older_than << ")\n";
  }
  std::cout << "evicted   " << report->evicted << " entries, "
            << format_bytes(report->evicted_bytes, units) << " (least recently used first)\n";
  std::cout << "left      " << report->entries << " entries, " << format_bytes(report->bytes, units)
            << '\n';
  std::cout << "cleaned   " << report->temp_removed << " temp files, " << report->locks_removed
            << " lock files of finished processes";
  if (report->pch_dirs_removed > 0) {
    std::cout << ", " << report->pch_dirs_removed << " PCH folders of finished processes ("
              << format_bytes(report->pch_bytes_removed, units) << ")";
  }
  if (report->non_regular_removed > 0) {
    std::cout << ", " << report->non_regular_removed << " non-regular files at entry paths";
  }
  std::cout << '\n';
  std::cout << "elapsed   " << format_ms(report->elapsed_ms) << '\n';
  return kExitOk;
}

}  // namespace

Command add_gc(CLI::App& app, Common& common) {
  auto args = std::make_shared<GcArgs>();
  CLI::App* command = add_command(
      app, "gc", "Evict least recently used entries above the size bound; remove leftover files");
  add_option(*command, "--max-size", args->max_size,
             "Size bound of this run, e.g. 500M, 1.5G, 5Gi (a number alone: GiB, as in ccache); 0: "
             "none (default: the store's max_size: "
             "$CUBBY_MAX_SIZE, else `cubby config max_size`, else 5Gi)")
      ->type_name("S");
  add_option(*command, "--older-than", args->older_than,
             "First remove the entries unused for longer than D: a number and its unit, "
             "d, h, m or s (7d, 12h, 30m, 90s)")
      ->type_name("D");
  add_option(*command, "--target", args->target,
             "Over the bound, evict down to this fraction of it, 0 to 1 (default 1.0)")
      ->check(finite_number(0.0, 1.0))
      ->type_name("F");
  add_common(*command, common);
  return {command, [&common, args] { return run_gc(common, *args); }};
}

}  // namespace cubby::cli
