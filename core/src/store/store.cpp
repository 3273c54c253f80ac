#include "store/store.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <utility>

#include "storage/local/lock.hpp"
#include "storage/remote/remote.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

// <root>/stats/zeroed: the Unix time in ms of the last zero_counters.
std::filesystem::path zeroed_path(const std::filesystem::path& root) {
  return root / "stats" / "zeroed";
}

}  // namespace

Result<StoreUsage> Store::usage() const {
  StoreUsage usage;
  auto listed = disk_.list([&](const DiskEntryInfo& info) {
    ++usage.entries;
    usage.bytes += info.bytes;
  });
  if (!listed) return listed.error();
  return usage;
}

Result<StoreUsage> Store::estimate() const {
  auto counters = StoreStats(root()).read();
  if (!counters) return counters.error();
  const auto value = [&](std::string_view name) -> std::uint64_t {
    const auto found = counters->find(name);
    return found == counters->end()
               ? 0
               : static_cast<std::uint64_t>(std::max<std::int64_t>(found->second, 0));
  };
  return StoreUsage{value("store_entries"), value("store_bytes")};
}

Result<std::vector<DiskEntryInfo>> Store::entries(NonRegular non_regular) const {
  std::vector<DiskEntryInfo> entries;
  auto listed =
      disk_.list([&](const DiskEntryInfo& info) { entries.push_back(info); }, {}, non_regular);
  if (!listed) return listed.error();
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.key < b.key; });
  return entries;
}

Result<std::vector<Key>> Store::keys_with_prefix(std::string_view hex_prefix) const {
  std::vector<Key> matches;
  auto listed = disk_.list(
      [&](const DiskEntryInfo& info) {
        if (info.key.hex().starts_with(hex_prefix)) matches.push_back(info.key);
      },
      hex_prefix.substr(0, 2), NonRegular::include);
  if (!listed) return listed.error();
  std::sort(matches.begin(), matches.end());
  return matches;
}

bool Store::contains(const Key& key) const {
  std::error_code error;
  return std::filesystem::exists(disk_.path_of(key), error);
}

bool Store::compile_in_progress(const Key& key) const {
  auto lock = FileLock::try_acquire(disk_.lock_path_of(key));
  return lock && !lock->has_value();
}

Result<std::uint64_t> Store::clear() { return clear_store(disk_); }

Result<std::uint64_t> Store::visit_decoded(
    const std::function<Result<void>(const DiskEntryInfo&, const Entry&)>& visit) const {
  auto listed = entries();
  if (!listed) return listed.error();
  std::uint64_t unreadable = 0;
  for (const auto& info : *listed) {
    auto bytes = disk_.peek(info.key);
    if (!bytes || !bytes->has_value()) {
      unreadable += bytes ? 0 : 1;  // one that vanished meanwhile is not counted
      continue;
    }
    auto entry = decode_entry(**bytes, info.key);
    if (!entry) {
      ++unreadable;
      continue;
    }
    if (auto done = visit(info, *entry); !done) return done.error();
  }
  return unreadable;
}

Result<StoreUsage> Store::namespace_usage(std::string_view ns) const {
  StoreUsage usage;
  auto visited = visit_decoded([&](const DiskEntryInfo& info, const Entry& entry) -> Result<void> {
    if (entry_namespace(entry) == ns) {
      ++usage.entries;
      usage.bytes += info.bytes;
    }
    return {};
  });
  if (!visited) return visited.error();
  return usage;
}

Result<ClearedNamespace> Store::clear_namespace(std::string_view ns) {
  ClearedNamespace cleared;
  auto visited = visit_decoded([&](const DiskEntryInfo& info, const Entry& entry) -> Result<void> {
    cleared.namespaces.insert(entry_namespace(entry));
    if (entry_namespace(entry) != ns) return {};
    if (auto gone = disk_.remove(info.key); !gone) return gone.error();
    ++cleared.removed;
    cleared.bytes += info.bytes;
    return {};
  });
  if (cleared.removed > 0) {  // the size estimate follows what left (gc makes it exact)
    (void)StoreStats(root()).add({{"store_bytes", -static_cast<std::int64_t>(cleared.bytes)},
                                  {"store_entries", -static_cast<std::int64_t>(cleared.removed)}});
  }
  if (!visited) return visited.error();
  cleared.unreadable = *visited;
  return cleared;
}

Result<StoreUsage> Store::remove_older_than(std::filesystem::file_time_type cutoff) {
  auto listed = entries();
  if (!listed) return listed.error();
  StoreUsage removed;
  for (const auto& info : *listed) {
    if (info.modified >= cutoff) continue;
    if (auto gone = disk_.remove(info.key); !gone) return gone.error();
    ++removed.entries;
    removed.bytes += info.bytes;
  }
  if (removed.entries > 0) {
    (void)StoreStats(root()).add({{"evictions", static_cast<std::int64_t>(removed.entries)}});
  }
  return removed;
}

Result<GcReport> Store::collect_garbage(const GcOptions& options) const {
  return cubby::collect_garbage(disk_, options);
}

Result<VerifyReport> Store::verify(
    bool fix, const std::function<void(const DiskEntryInfo&, const std::string&)>& on_bad,
    VerifyDepth depth) {
  return verify_store(disk_, fix, on_bad, depth);
}

PchCleanup Store::remove_dead_pch_dirs() const { return cubby::remove_dead_pch_dirs(root()); }

Result<Counters> Store::counters() const { return StoreStats(root()).read(); }

Result<void> Store::zero_counters() {
  auto cleared = StoreStats(root()).update([](Counters& counters) {
    std::erase_if(counters, [](const auto& item) { return !is_size_estimate(item.first); });
  });
  if (!cleared) return cleared.error();
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  auto file = io::AtomicFile::create(zeroed_path(root()), io::FileMode::group_shared, true);
  Result<void> written =
      file ? file->write(std::to_string(now) + "\n") : Result<void>(file.error());
  if (written) written = file->commit();
  return written;
}

std::optional<std::int64_t> Store::zeroed_ms() const {
  auto text = io::read_file(zeroed_path(root()), 64);
  if (!text) return std::nullopt;
  std::int64_t ms = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), ms);
  if (error != std::errc() || ms <= 0) return std::nullopt;
  return ms;
}

std::string redacted_remote_url(std::string_view url) { return redact_remote_url(url); }

}  // namespace cubby
