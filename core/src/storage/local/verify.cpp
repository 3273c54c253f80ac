// Entry and store verification; contract in storage/local/verify.hpp.
#include "storage/local/verify.hpp"

#include <unistd.h>

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "cubby/cubin.hpp"
#include "cubby/recover.hpp"
#include "util/io.hpp"

namespace cubby {

Result<void> verify_entry_symbols(const Entry& entry) {
  if (entry.kind == PayloadKind::cubin) {
    // The hit path: one pass over the symbol table (views into the payload) marking the lowered
    // names it defines, looked up in a sorted list of them; no copy of a symbol's name.
    auto symbols = read_cubin_symbol_refs(entry.payload);
    if (!symbols) return fail(Errc::corrupt, "the CUBIN does not parse: ", symbols.error().message);
    std::vector<std::pair<std::string_view, bool>> wanted;  // lowered name, defined
    wanted.reserve(entry.lowered_names.size());
    for (const auto& [expression, lowered] : entry.lowered_names)
      wanted.emplace_back(lowered, false);
    std::sort(wanted.begin(), wanted.end());
    const auto first_of = [&wanted](std::string_view name) {
      return std::lower_bound(
          wanted.begin(), wanted.end(), name,
          [](const auto& item, std::string_view key) { return item.first < key; });
    };
    for (const CubinSymbolRef& symbol : *symbols) {
      for (auto it = first_of(symbol.name); it != wanted.end() && it->first == symbol.name; ++it) {
        it->second = true;
      }
    }
    for (const auto& [expression, lowered] : entry.lowered_names) {
      if (!first_of(lowered)->second) {
        return fail(Errc::corrupt, "lowered name ", lowered, " of '", expression,
                    "' is not a symbol of the entry's CUBIN");
      }
    }
    return {};
  }
  for (const auto& [expression, lowered] : entry.lowered_names) {
    if (!payload_has_symbol(entry.payload, payload_kind_name(entry.kind), lowered)) {
      return fail(Errc::corrupt, "lowered name ", lowered, " of '", expression,
                  "' is not in the entry's payload");
    }
  }
  return {};
}

Result<void> verify_entry_names(const Entry& entry) {
  auto symbols = verify_entry_symbols(entry);
  if (!symbols) return symbols;
  auto names = check_entry_names(entry);
  if (!names) return names.error();
  if (!names->ok()) {
    return fail(Errc::corrupt, "its name map disagrees with its CUBIN: ", names->problems());
  }
  return {};
}

Result<Entry> verify_entry(std::string_view bytes, const Key& key) {
  auto entry = decode_entry(bytes, key);
  if (!entry) return entry;
  auto symbols = verify_entry_symbols(*entry);
  if (!symbols) return symbols.error();
  return entry;
}

Result<VerifyReport> verify_store(
    DiskTier& disk, bool fix,
    const std::function<void(const DiskEntryInfo&, const std::string&)>& on_bad,
    VerifyDepth depth) {
  VerifyReport report;
  std::vector<DiskEntryInfo> entries;
  // Non-regular files at entry paths too: read_file refuses them (never following or blocking),
  // so they are reported bad and, with `fix`, unlinked.
  auto listed = disk.list([&](const DiskEntryInfo& info) { entries.push_back(info); }, {},
                          NonRegular::include);
  if (!listed) return listed.error();
  for (const DiskEntryInfo& info : entries) {
    auto bytes = io::read_file(info.path, kMaxEntryBytes);
    if (!bytes && bytes.error().code == Errc::not_found) continue;  // removed meanwhile
    ++report.entries;
    if (const auto format = bytes ? entry_format(*bytes) : EntryFormat::current;
        format != EntryFormat::current) {
      ++(format == EntryFormat::newer ? report.newer : report.older);
      continue;
    }
    std::string why;
    if (!bytes) {
      why = bytes.error().message;
    } else if (auto entry = verify_entry(*bytes, info.key); !entry) {
      why = entry.error().message;
    } else if (depth == VerifyDepth::names) {
      if (auto names = verify_entry_names(*entry); !names) why = names.error().message;
    }
    if (why.empty()) continue;
    ++report.bad;
    on_bad(info, why);
    if (fix && ::unlink(info.path.c_str()) == 0) ++report.removed;
  }
  return report;
}

}  // namespace cubby
