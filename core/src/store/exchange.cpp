#include "store/exchange.hpp"

#include <chrono>
#include <optional>

#include "storage/local/manifests.hpp"

namespace cubby {
namespace {

std::int64_t unix_seconds_of(std::filesystem::file_time_type time) {
  const auto system = std::chrono::file_clock::to_sys(time);
  return std::chrono::duration_cast<std::chrono::seconds>(system.time_since_epoch()).count();
}

// The key a member is named after (<32 hex>.entry, in any folder), or nothing for a member that is
// no entry file.
std::optional<Key> member_key(std::string_view name, bool regular) {
  const std::size_t slash = name.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? name : name.substr(slash + 1);
  if (!regular || base.size() != 38 || !base.ends_with(".entry")) return std::nullopt;
  auto key = Key::parse(base.substr(0, 32));
  if (!key) return std::nullopt;
  return *key;
}

// Merges a suite manifest member into the store's: the recipes the store knows first, then the
// archive's. A member that does not decode is rejected.
void import_manifest(Store& store, std::string_view name, const std::string& bytes,
                     ImportTally& tally) {
  auto manifest = decode_manifest(bytes);
  if (!manifest) {
    ++tally.rejected;
    tally.problems.push_back({"", std::string(name), manifest.error().message});
    return;
  }
  auto local = load_manifest(store.root(), manifest->suite);  // a damaged one is replaced
  if (local && *local) manifest->recipes = merge_recipes((*local)->recipes, manifest->recipes);
  if (!tally.write_error.empty()) return;
  if (auto saved = save_manifest(store.root(), *manifest); !saved) {
    tally.write_error = saved.error().message;
    return;
  }
  ++tally.manifests;
}

// Appends every suite's manifest; false when `member` refused one.
bool export_manifests(const Store& store, const std::function<bool(const ExportMember&)>& member) {
  for (const std::string& suite : list_suites(store.root())) {
    auto manifest = load_manifest(store.root(), suite);
    if (!manifest || !*manifest) continue;
    ExportMember out;
    out.kind = ExportMember::Kind::manifest;
    out.name = "manifests/" + manifest_stem(suite) + ".manifest";
    out.bytes = encode_manifest(**manifest);
    if (!member(out)) return false;
  }
  return true;
}

}  // namespace

Result<void> export_store(const Store& store,
                          const std::function<bool(const ExportMember&)>& member,
                          const std::function<void(const std::string&)>& skipped) {
  auto listed = store.entries(NonRegular::include);
  if (!listed) return listed.error();
  for (const auto& info : *listed) {
    auto read = store.peek(info.key);          // refuses a link, FIFO, device or huge file unread
    if (read && !read->has_value()) continue;  // removed meanwhile
    if (!read) {
      skipped("skipping entry " + info.key.hex() + ": " + read.error().message +
              " (`cubby verify --fix` removes it)");
      continue;
    }
    ExportMember out;
    out.bytes = std::move(**read);
    if (entry_format(out.bytes) == EntryFormat::current) {  // another release's: carried as it is
      if (auto checked = verify_entry(out.bytes, info.key); !checked) {
        skipped("skipping bad entry " + info.key.hex() + ": " + checked.error().message +
                " (run `cubby verify --fix`)");
        continue;
      }
    }
    const std::string hex = info.key.hex();
    out.name = "entries/" + hex.substr(0, 2) + "/" + hex + ".entry";
    out.mtime = unix_seconds_of(info.modified);
    if (!member(out)) return {};
  }
  export_manifests(store, member);
  return {};
}

void import_member(Store& store, std::string_view name, bool regular, const std::string& bytes,
                   ImportTally& tally) {
  if (regular && name.starts_with("manifests/") && name.ends_with(".manifest")) {
    import_manifest(store, name, bytes, tally);
    return;
  }
  const std::optional<Key> key = member_key(name, regular);
  if (!key) {
    ++tally.foreign;
    return;
  }
  if (store.contains(*key)) {
    ++tally.present;
    return;
  }
  auto checked = verify_entry(bytes, *key);
  if (!checked && checked.error().code == Errc::not_found) {
    ++tally.other_format;  // another cubby release's entry: not ours to verify or import
    return;
  }
  if (!checked) {
    ++tally.rejected;
    tally.problems.push_back({key->hex(), "", checked.error().message});
    return;
  }
  if (!tally.write_error.empty()) return;
  if (auto written = store.put(*key, bytes); !written) {
    tally.write_error = written.error().message;
    return;
  }
  ++tally.imported;
  tally.bytes += bytes.size();
}

void finish_import(Store& store, const ImportTally& tally) {
  if (tally.imported == 0) return;
  (void)StoreStats(store.root())
      .add({{"store_bytes", static_cast<std::int64_t>(tally.bytes)},
            {"store_entries", static_cast<std::int64_t>(tally.imported)}});
}

}  // namespace cubby
