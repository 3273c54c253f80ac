// The store as a whole: the one door through which the C API, the CLI and the Cache work on a
// store folder ($CUBBY_DIR) rather than look up one key. It measures what the store holds (usage),
// reads its persisted size estimate and counters, lists, reads and resolves entries, clears it
// (whole or one namespace), collects garbage, verifies it, and tells whether a key is stored or
// being compiled. Export and import: store/exchange.hpp; the suites' manifests:
// store/suites.hpp.
//
// A Store is a path and nothing else: constructing one touches no file, and two Stores (or a
// Store and the Cache of another process) on one folder are safe together, as the storage/local
// code under it is (see disk.hpp, gc.hpp, store_stats.hpp). Callers check that a store is
// writable (Config::read_only) before they ask for a change; the Store does not read settings.
// Errors are Result failures whose messages name the store and say what to do.
//
// The types it hands out (entry listings, gc options and reports, verify reports, counters, blob
// namespaces) come from the storage/local and format headers included below: a front end
// includes this header, never those.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/entry.hpp"
#include "cubby/error.hpp"
#include "cubby/key.hpp"
#include "format/blob.hpp"
#include "storage/local/disk.hpp"
#include "storage/local/gc.hpp"
#include "storage/local/pch_dir.hpp"
#include "storage/local/store_stats.hpp"
#include "storage/local/verify.hpp"

namespace cubby {

// Entries and bytes.
struct StoreUsage {
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;
};

// What clearing one namespace did.
struct ClearedNamespace {
  std::uint64_t removed = 0;
  std::uint64_t bytes = 0;
  std::uint64_t unreadable = 0;      // entries that do not decode: their namespace is unknown, kept
  std::set<std::string> namespaces;  // every namespace seen in the store
};

class Store {
 public:
  // The store at `root` (Config::dir). Touches nothing.
  explicit Store(std::filesystem::path root) : disk_(std::move(root)) {}

  const std::filesystem::path& root() const { return disk_.root(); }

  // What the store holds, measured by walking it (regular entry files only). Errc::io when it
  // cannot be listed.
  Result<StoreUsage> usage() const;
  // The persisted size estimate (store_entries / store_bytes: kept by every write and removal,
  // made exact by gc), negative values read as 0. Errc::corrupt when the counters file is garbage.
  Result<StoreUsage> estimate() const;

  // Every entry file, sorted by key (with NonRegular::include, non-regular files at entry paths
  // too). Errc::io when the store cannot be listed.
  Result<std::vector<DiskEntryInfo>> entries(NonRegular non_regular = NonRegular::skip) const;
  // The keys of the stored entries (non-regular files at entry paths included) whose hex starts
  // with `hex_prefix` (lowercase, 2 digits or more), sorted. Errc::io as entries().
  Result<std::vector<Key>> keys_with_prefix(std::string_view hex_prefix) const;
  // The bytes stored under `key` (nullopt: none), without refreshing its recency (DiskTier::peek):
  // a link, FIFO, device or oversized file there is Errc::corrupt, never read.
  Result<std::optional<std::string>> peek(const Key& key) const { return disk_.peek(key); }
  std::filesystem::path path_of(const Key& key) const { return disk_.path_of(key); }
  // Publishes `bytes` as `key`'s entry (DiskTier::put: atomic, group-readable), unchecked and
  // not counted in the size estimate: the caller verified it and accounts for it (import).
  Result<void> put(const Key& key, std::string_view bytes) { return disk_.put(key, bytes); }
  // Whether something is stored under `key` (a file at its path; not read).
  bool contains(const Key& key) const;
  // Whether another process holds `key`'s compile lock (it is compiling that key now).
  bool compile_in_progress(const Key& key) const;

  // Removes every entry and sets the size estimate to an empty store (clear_store, gc.hpp); the
  // count removed. Errc::io.
  Result<std::uint64_t> clear();
  // The entries of namespace `ns` (entry_namespace, format/blob.hpp) and their bytes: every entry
  // file read and decoded (a scan of the whole store, as clear_namespace's); entries that do not
  // decode are not counted. Errc::io when the store cannot be listed.
  Result<StoreUsage> namespace_usage(std::string_view ns) const;
  // Removes the entries of namespace `ns` (entry_namespace, format/blob.hpp) and takes them out
  // of the size estimate; entries that do not decode are kept and counted. Errc::io when the
  // store cannot be listed or an entry cannot be removed.
  Result<ClearedNamespace> clear_namespace(std::string_view ns);
  // Removes every entry last used (its mtime) before `cutoff`, counted as evictions; the size
  // estimate is left to the collect_garbage that follows. Entries and bytes removed; Errc::io.
  Result<StoreUsage> remove_older_than(std::filesystem::file_time_type cutoff);
  // collect_garbage (gc.hpp): dead leftovers, then least-recently-used eviction to the bound.
  Result<GcReport> collect_garbage(const GcOptions& options) const;
  // verify_store (verify.hpp): every entry checked at `depth`, `on_bad` called for each bad one,
  // removed with `fix`.
  Result<VerifyReport> verify(
      bool fix, const std::function<void(const DiskEntryInfo&, const std::string&)>& on_bad,
      VerifyDepth depth);
  // Removes the PCH folders of processes that are gone (remove_dead_pch_dirs, pch_dir.hpp).
  PchCleanup remove_dead_pch_dirs() const;

  // The persisted counters of every process that used the store (StoreStats::read).
  Result<Counters> counters() const;
  // Zeroes every persisted counter but the size estimate, and records the time (Unix ms) in
  // <root>/stats/zeroed. Errc::io when the store cannot be written.
  Result<void> zero_counters();
  // When the counters were last zeroed (Unix ms), or nullopt: never (or the record is unreadable).
  std::optional<std::int64_t> zeroed_ms() const;

 private:
  // Calls `visit` with every entry file that reads and decodes (sorted by key), stopping at its
  // first failure; the count of those that do not (their namespace is unknown). Errc::io when
  // the store cannot be listed.
  Result<std::uint64_t> visit_decoded(
      const std::function<Result<void>(const DiskEntryInfo&, const Entry&)>& visit) const;

  DiskTier disk_;
};

// `url` (CUBBY_REMOTE) with its credentials hidden, for display (redact_remote_url).
std::string redacted_remote_url(std::string_view url);

}  // namespace cubby
