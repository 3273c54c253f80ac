// `cubby verify [--fix]`: checksum, symbol and name-map check of every entry (see
// storage/local/verify.hpp, VerifyDepth::names); reports (and removes) bad ones.
#include <iostream>

#include "cli.hpp"

namespace cubby::cli {
namespace {

int run_verify(const Common& common, bool fix) {
  const Config config = load_config(common);
  if (fix) require_writable(config, "--fix (it removes entries)");
  Store store(config.dir);
  json bad = json::array();
  auto report = store.verify(
      fix,
      [&](const DiskEntryInfo& info, const std::string& why) {
        bad.push_back({{"key", info.key.hex()}, {"path", info.path.string()}, {"problem", why}});
        if (!common.json) {
          std::cout << "bad  " << info.key.hex() << "  " << why << (fix ? " (removed)" : "")
                    << '\n';
        }
      },
      VerifyDepth::names);
  if (!report) fail_with(kExitFailed, report.error().message);
  const bool clean = report->bad == report->removed;
  if (common.json) {
    print_json({{"dir", config.dir.string()},
                {"entries", report->entries},
                {"ok", report->entries - report->bad - report->newer - report->older},
                {"bad", report->bad},
                {"newer_format", report->newer},
                {"older_format", report->older},
                {"removed", report->removed},
                {"problems", bad}});
  } else {
    std::cout << report->entries << (report->entries == 1 ? " entry" : " entries") << " checked in "
              << config.dir.string() << ": " << report->bad << " bad";
    if (report->newer > 0) std::cout << ", " << report->newer << " of a newer format (kept)";
    if (report->older > 0) {
      std::cout
          << ", " << report->older
          << " of an older format (kept for older cubby releases; gc evicts them once unused)";
    }
    if (fix) std::cout << ", " << report->removed << " removed";
    std::cout << '\n';
    if (!clean) std::cout << "run `cubby verify --fix` to remove the bad entries\n";
  }
  return clean ? kExitOk : kExitFailed;
}

}  // namespace

Command add_verify(CLI::App& app, Common& common) {
  auto fix = std::make_shared<bool>(false);
  CLI::App* command = add_command(
      app, "verify",
      "Check every entry (checksum, symbols of its CUBIN, its name map against the CUBIN's "
      "symbols); exit 1 if any is bad");
  add_flag(*command, "--fix", *fix, "Remove the bad entries (they are recompiled when next used)");
  add_common(*command, common);
  return {command, [&common, fix] { return run_verify(common, *fix); }};
}

}  // namespace cubby::cli
