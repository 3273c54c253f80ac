// `cubby stats`: entries and bytes in the store.
#include <iostream>

#include "cli.hpp"

namespace cubby::cli {
namespace {

int run_stats(const Common& common) {
  const Config config = load_config(common);
  DiskTier disk(config.dir);
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

}  // namespace

Command add_stats(CLI::App& app, Common& common) {
  CLI::App* command = app.add_subcommand("stats", "Entries and bytes in the store");
  add_common(*command, common);
  return {command, [&common] { return run_stats(common); }};
}

}  // namespace cubby::cli
