// `cubby gc [--max-size S]`: least-recently-used eviction to the bound, leftover cleanup.
#include "storage/local/gc.hpp"

#include <iostream>

#include "cli.hpp"

namespace cubby::cli {
namespace {

struct GcArgs {
  std::string max_size;
  double target = 1.0;
};

int run_gc(const Common& common, const GcArgs& args) {
  const Config config = load_config(common);
  if (config.read_only) fail_with(kExitUsage, "CUBBY_READ_ONLY is set; unset it to run gc");
  GcOptions options;
  options.max_size = config.max_size;
  if (!args.max_size.empty()) {
    auto size = parse_size(args.max_size);
    if (!size)
      fail_with(kExitUsage, "--max-size \"" + args.max_size + "\": " + size.error().message);
    options.max_size = *size;
  }
  options.target_ratio = args.target;
  DiskTier disk(config.dir);
  auto report = collect_garbage(disk, options);
  if (!report) fail_with(kExitFailed, report.error().message);
  if (common.json) {
    print_json({{"dir", config.dir.string()},
                {"max_size", options.max_size},
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
                {"elapsed_ms", report->elapsed_ms}});
    return kExitOk;
  }
  std::cout << "store     " << config.dir.string() << '\n';
  std::cout << "bound     " << format_bytes(options.max_size) << '\n';
  std::cout << "evicted   " << report->evicted << " entries, "
            << format_bytes(report->evicted_bytes) << " (least recently used first)\n";
  std::cout << "left      " << report->entries << " entries, " << format_bytes(report->bytes)
            << '\n';
  std::cout << "cleaned   " << report->temp_removed << " temp files, " << report->locks_removed
            << " lock files of finished processes";
  if (report->pch_dirs_removed > 0) {
    std::cout << ", " << report->pch_dirs_removed << " PCH folders of finished processes ("
              << format_bytes(report->pch_bytes_removed) << ")";
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
  CLI::App* command = app.add_subcommand(
      "gc", "Evict least recently used entries above the size bound; remove leftover files");
  command
      ->add_option("--max-size", args->max_size,
                   "Size bound, e.g. 500M, 5G (default: $CUBBY_MAX_SIZE, else 5G)")
      ->type_name("S");
  command
      ->add_option("--target", args->target,
                   "Over the bound, evict down to this fraction of it (default 1.0)")
      ->check(CLI::Range(0.0, 1.0))
      ->type_name("F");
  add_common(*command, common);
  return {command, [&common, args] { return run_gc(common, *args); }};
}

}  // namespace cubby::cli
