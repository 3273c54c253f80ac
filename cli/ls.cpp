// `cubby ls`: one line per entry (a corrupt one is listed as such).
#include <iomanip>
#include <iostream>

#include "cli.hpp"

namespace cubby::cli {
namespace {

int run_ls(const Common& common) {
  const Config config = load_config(common);
  DiskTier disk(config.dir);
  json rows = json::array();
  // Non-regular files at entry paths are listed as such and never opened for reading.
  for (const auto& info : list_entries(disk, NonRegular::include)) {
    const std::int64_t modified_ms = unix_ms_of(info.modified);
    json row = {{"key", info.key.hex()},
                {"bytes", info.bytes},
                {"modified", format_unix_ms(modified_ms)},
                {"modified_ms", modified_ms}};
    auto bytes = disk.peek(info.key);
    if (!info.regular) {  // peek refused it without reading (or it was replaced meanwhile)
      row["status"] = "not_regular";
      row["error"] = (bytes ? std::string("not a regular file") : bytes.error().message) +
                     "; skipped (`cubby verify --fix` or `cubby gc` removes it)";
    } else if (!bytes || !bytes->has_value()) {
      row["status"] = "unreadable";
      row["error"] =
          bytes ? std::string("the entry vanished while listing") : bytes.error().message;
    } else if (auto entry = decode_entry(**bytes, info.key); !entry) {
      row["status"] = entry.error().code == Errc::not_found ? "other_format" : "corrupt";
      row["error"] = entry.error().message;
    } else {
      row["status"] = "ok";
      row["kind"] = payload_kind_name(entry->kind);
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

}  // namespace

Command add_ls(CLI::App& app, Common& common) {
  CLI::App* command = app.add_subcommand("ls", "List the entries of the store");
  add_common(*command, common);
  return {command, [&common] { return run_ls(common); }};
}

}  // namespace cubby::cli
