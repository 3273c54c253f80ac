// Store maintenance: least-recently-used eviction down to a size bound, and removal of what dead
// processes left behind (temp files of interrupted writes, lock files no one holds) and of
// non-regular files at entry paths.
//
// gc removes only names cubby generates: `<32 hex>.entry` (and their temp files
// `<32 hex>.entry.tmp.<pid>.<16 hex>`) in entries/<2 hex>/, `<32 hex>.lock` in locks/<2 hex>/ and
// `counters.tmp.<pid>.<16 hex>` in stats/, and the PCH folders of dead processes in tmp/
// (pch_dir.hpp: their *.pch files and the folder). It never follows a link (folders are opened with
// O_NOFOLLOW, files with openat/unlinkat) and never enters a folder it did not make: foreign
// files, foreign sub-folders and linked shard folders are left untouched, and an entries/,
// locks/ or stats/ that is a link (or not a folder) makes gc fail with Errc::io naming it,
// before anything is written or removed.
//
// Recency is each entry file's mtime (see disk.hpp). Everything runs under the store's gc lock
// (<root>/locks/gc.lock), so two collectors never race, and never under any lock a reader or a
// compiling process needs. Removing an entry is an unlink: a reader that already opened it keeps
// reading it whole; a later reader misses and recompiles.
//
// Two scopes:
//  - the whole store (`cubby gc`, `collect_garbage`): exact LRU over every entry; rewrites the
//    store's size estimate (store_bytes / store_entries in StoreStats) with the measured figures;
//  - one group (`trim_group`): the entries whose key starts with one hex digit, 1/16 of the store,
//    trimmed to 1/16 of the bound. The orchestrator runs it after a write pushed the size estimate
//    over the bound, for the written key's group only, so no caller stalls on a scan of a big
//    store (the same incremental scheme as ccache's 16 sub-folders).
#pragma once

#include <chrono>
#include <cstdint>

#include "cubby/error.hpp"
#include "storage/local/disk.hpp"

namespace cubby {

struct GcOptions {
  std::uint64_t max_size = 5ull << 30;  // evict least recently used entries above this
  // Evict down to this fraction of max_size, so that the next writes do not trigger again at once.
  double target_ratio = 0.9;
  // Temp and lock files are removed when no one holds their flock and, for temp files, they are
  // at least this old (a writer takes its flock right after creating the file).
  std::chrono::seconds temp_min_age{2};
  // Remove dead temp files, unheld lock files and non-regular files at entry paths.
  bool clean_leftovers = true;
  bool wait_for_lock = true;  // false: return `skipped` at once if another gc runs
};

struct GcReport {
  bool skipped = false;  // another process holds the gc lock (only when !wait_for_lock)
  std::uint64_t entries_before = 0;
  std::uint64_t bytes_before = 0;
  std::uint64_t entries = 0;  // after
  std::uint64_t bytes = 0;    // after
  std::uint64_t evicted = 0;
  std::uint64_t evicted_bytes = 0;
  std::uint64_t temp_removed = 0;
  std::uint64_t locks_removed = 0;
  std::uint64_t non_regular_removed = 0;  // links, FIFOs, ... at entry paths (collect_garbage)
  std::uint64_t pch_dirs_removed = 0;     // PCH folders of dead processes (collect_garbage)
  std::uint64_t pch_bytes_removed = 0;
  double elapsed_ms = 0;
};

// The whole store: removes dead leftovers and non-regular files at entry paths, then evicts least
// recently used entries until the store holds at most target_ratio * max_size bytes (nothing if it
// is within max_size). Updates the persisted size estimate and the `evictions` counter. Errc::io if
// the store cannot be listed.
Result<GcReport> collect_garbage(const DiskTier& disk, const GcOptions& options);

// One group (`group` in 0..15: keys whose first hex digit it is): evicts its least recently used
// entries until it holds at most target_ratio * max_size / 16. Reports the group's figures and
// adjusts the persisted size estimate by what it removed. Never waits for the gc lock.
Result<GcReport> trim_group(const DiskTier& disk, unsigned group, const GcOptions& options);

// Removes every entry (DiskTier::clear) and sets the persisted size estimate to an empty store
// (an entry written while it ran is counted again by the next collect_garbage). Returns the count
// removed; Errc::io as DiskTier::clear.
Result<std::uint64_t> clear_store(DiskTier& disk);

}  // namespace cubby
