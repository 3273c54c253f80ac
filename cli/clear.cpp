// `cubby clear`: removes every entry of the store.
#include <iostream>

#include "cli.hpp"

namespace cubby::cli {
namespace {

int run_clear(const Common& common) {
  const Config config = load_config(common);
  DiskTier disk(config.dir);
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

}  // namespace

Command add_clear(CLI::App& app, Common& common) {
  CLI::App* command = app.add_subcommand("clear", "Remove every entry of the store");
  add_common(*command, common);
  return {command, [&common] { return run_clear(common); }};
}

}  // namespace cubby::cli
