// `cubby ls`: one line per entry (a corrupt one is listed as such).
#include <iomanip>
#include <iostream>

#include "cli.hpp"

namespace cubby::cli {
namespace {

// The names column of an entry's row: its name expressions (a blob: its name), cut to about
// kNamesWidth characters with the count of those left out.
constexpr std::size_t kNamesWidth = 60;

std::string names_column(const json& row) {
  if (row.contains("name")) return row["name"].get<std::string>();
  const json& expressions = row["name_expressions"];
  if (expressions.empty()) return "(no name expressions)";
  std::string text;
  std::size_t shown = 0;
  for (const auto& expression : expressions) {
    const std::string item = expression.get<std::string>();
    if (shown > 0 && text.size() + item.size() + 2 > kNamesWidth) break;
    text += (shown == 0 ? "" : ", ") + item;
    ++shown;
  }
  if (shown < expressions.size()) {
    text += " (+" + std::to_string(expressions.size() - shown) + " more, `cubby ls -v`)";
  }
  return text;
}

// One entry's row: key, size, modified, and what it holds (or why it cannot be read).
json entry_row(const Store& store, const DiskEntryInfo& info, bool verbose) {
  const std::int64_t modified_ms = unix_ms_of(info.modified);
  json row = {{"key", info.key.hex()},
              {"bytes", info.bytes},
              {"modified", format_unix_ms(modified_ms)},
              {"modified_ms", modified_ms}};
  auto bytes = store.peek(info.key);
  if (!info.regular) {  // peek refused it without reading (or it was replaced meanwhile)
    row["status"] = "not_regular";
    row["error"] = (bytes ? std::string("not a regular file") : bytes.error().message) +
                   "; skipped (`cubby verify --fix` or `cubby gc` removes it)";
  } else if (!bytes || !bytes->has_value()) {
    row["status"] = "unreadable";
    row["error"] = bytes ? std::string("the entry vanished while listing") : bytes.error().message;
  } else if (auto entry = decode_entry(**bytes, info.key); !entry) {
    row["status"] = entry.error().code == Errc::not_found ? "other_format" : "corrupt";
    row["error"] = entry.error().message;
  } else {
    row["status"] = "ok";
    row["kind"] = payload_kind_name(entry->kind);
    row["namespace"] = entry_namespace(*entry);
    if (entry->kind == PayloadKind::blob) row["name"] = blob_name(*entry);
    row["names"] = entry->lowered_names.size();
    json expressions = json::array();
    for (const auto& item : entry->lowered_names) expressions.push_back(item.first);
    row["name_expressions"] = std::move(expressions);
    if (verbose) row["lowered_names"] = names_json(*entry);
    row["compile_ms"] = rounded_ms(compile_ms_of(*entry));
  }
  return row;
}

void print_rows(const json& rows, bool verbose) {
  std::cout << std::left << std::setw(34) << "KEY" << std::right << std::setw(10) << "SIZE"
            << "  " << std::left << std::setw(22) << "LAST USED" << std::setw(7) << "KIND"
            << std::setw(10) << "NAMESPACE"
            << "NAMES" << std::right << '\n';
  for (const auto& row : rows) {
    std::cout << row["key"].get<std::string>() << "  " << std::setw(10)
              << format_bytes(row["bytes"].get<std::uint64_t>()) << "  " << std::left
              << std::setw(22) << row["modified"].get<std::string>();
    if (row["status"] != "ok") {
      std::cout << row["status"].get<std::string>() << " (" << row["error"].get<std::string>()
                << ")" << std::right << '\n';
      continue;
    }
    std::cout << std::setw(7) << row["kind"].get<std::string>() << std::setw(10)
              << row["namespace"].get<std::string>() << std::right;
    if (!verbose) {
      std::cout << names_column(row) << '\n';
      continue;
    }
    const std::size_t names = row["names"].get<std::size_t>();
    std::cout << (row.contains("name") ? std::to_string(names) : count_of(names, "name")) << '\n';
    if (row.contains("name")) std::cout << "    name " << row["name"].get<std::string>() << '\n';
    for (const auto& [expression, lowered] : row["lowered_names"].items()) {
      std::cout << "    " << expression << " -> " << lowered.get<std::string>() << '\n';
    }
  }
}

int run_ls(const Common& common, bool verbose) {
  const Config config = load_config(common);
  const Store store(config.dir);
  json rows = json::array();
  // Non-regular files at entry paths are listed as such and never opened for reading.
  for (const auto& info : list_entries(store, NonRegular::include)) {
    rows.push_back(entry_row(store, info, verbose));
  }
  if (common.json) {
    print_json(rows);
    return kExitOk;
  }
  if (rows.empty()) {
    std::cerr << "no entries in " << config.dir.string() << '\n';
    return kExitOk;
  }
  print_rows(rows, verbose);
  return kExitOk;
}

}  // namespace

Command add_ls(CLI::App& app, Common& common) {
  auto verbose = std::make_shared<bool>(false);
  CLI::App* command = add_command(
      app, "ls", "List the entries of the store: key, size, last use, kind, namespace, names");
  add_flag(*command, "-v,--verbose", *verbose,
           "Every name expression with its lowered name, one per line");
  add_common(*command, common);
  return {command, [&common, verbose] { return run_ls(common, *verbose); }};
}

}  // namespace cubby::cli
