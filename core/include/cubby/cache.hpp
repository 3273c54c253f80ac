// The orchestrator: memory -> disk -> remote -> compile, with stats. Thread-safe; one compile per
// key at a time within the process. Public boundary: throws cubby::Error.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "cubby/config.hpp"
#include "cubby/entry.hpp"
#include "cubby/export.h"
#include "cubby/key.hpp"
#include "cubby/nvrtc.hpp"
#include "cubby/stats.hpp"
#include "cubby/storage/disk.hpp"
#include "cubby/storage/memory.hpp"
#include "cubby/storage/remote.hpp"
#include "cubby/storage/store_stats.hpp"

namespace cubby {

class Background;

enum class Source { memory, disk, remote, compiled };

// "memory", "disk", "remote", "compiled".
CUBBY_API const char* source_name(Source source) noexcept;

struct CUBBY_API CacheResult {
  Key key;
  bool hit = false;                    // false: compiled by this call
  Source tier = Source::compiled;      // where the entry came from
  std::shared_ptr<const Entry> entry;  // never null
  double elapsed_ms = 0;               // this call, key derivation included

  // The lowered name of a name expression given at compile time; throws name_not_found.
  const std::string& lowered_name(std::string_view name_expression) const;
};

// Stats (a process's counters) and difference: cubby/stats.hpp.

class CUBBY_API Cache {
 public:
  // Opens (lazily: no filesystem or NVRTC work) the store of `config`.
  explicit Cache(Config config);
  // Config::from_env(); throws cubby::Error on a malformed variable.
  Cache();
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // The entry for `request`: from memory, disk, the remote (verified like a disk entry, then
  // written to disk by a background thread; the destructor waits for those writes), else
  // compiled and stored (disk, and queued for the remote). The remote is asked before the
  // cross-process compile lock, which only a compile needs. A disk entry that does not decode or
  // lacks one of its lowered names is counted corrupt, removed and recompiled; a bad remote entry
  // is a counted remote miss, never served.
  // A store that cannot be written leaves the result usable (warns once, counts failed_writes).
  // Throws cubby::Error: compile_failed (NVRTC's log in what()), invalid_argument,
  // nvrtc_unavailable.
  CacheResult compile(const CompileRequest& request);

  // Blob `name` of namespace `ns` (see blob.hpp): from memory, else disk; nullopt on a miss
  // (counted as a miss). A stored entry that does not decode or is not that blob is counted
  // corrupt, removed and reported as a miss. Throws cubby::Error(invalid_argument) for a bad name.
  std::optional<CacheResult> load_blob(std::string_view ns, std::string_view name);
  // Stores `payload` byte for byte as blob `name` of `ns` (memory and disk; `compile_ms`: what
  // producing it cost, credited as saved on later hits). A store that cannot be written warns
  // once and counts failed_writes, as for compiles. Throws cubby::Error(invalid_argument).
  CacheResult store_blob(std::string_view ns, std::string_view name, std::string_view payload,
                         double compile_ms);

  // The key inputs / key of `request` (arch resolved as `compile` would). No NVRTC work.
  KeyInputs key_inputs(const CompileRequest& request) const;
  Key key_of(const CompileRequest& request) const;

  // The architecture `compile` uses when a request leaves it empty.
  std::string default_arch() const;

  Stats stats() const;
  // Finishes the work in flight: waits for the disk back-fills of remote hits, gives queued
  // remote writes a bounded chance (max(1 s, 4 x CUBBY_REMOTE_TIMEOUT_MS); what is left is
  // dropped and counted), persists the counters to the store and reports them to
  // CUBBY_STATS_FILE. The destructor does the same; call it where a Cache lives until the
  // process exits (the GoogleTest harness does, after the last test). The Cache stays usable.
  void finish();
  const Config& config() const { return config_; }
  DiskTier& disk() { return disk_; }
  MemoryTier& memory() { return memory_; }

 private:
  std::shared_ptr<const Entry> from_disk(const Key& key, const KeyInputs& inputs);
  // The remote tier's verified entry for `key` (a failure or a bad entry is a counted miss);
  // `bytes` receives its encoded form (what the disk tier stores).
  std::shared_ptr<const Entry> from_remote(const Key& key, const KeyInputs& inputs,
                                           std::string& bytes);
  // Writes a verified remote entry's bytes to disk (unless read-only). Counted like `store`, but
  // its counters are persisted lazily; eviction is checked against the persisted size estimate.
  void backfill(const Key& key, const std::string& bytes);
  void note_failed_write(const std::string& why);
  // A bad file at `key`'s entry path (corrupt, another key's, not a regular file; `size` bytes,
  // 0 when it was not read): says so on stderr, counts it `corrupt` and removes it (unless
  // read-only), taking it out of the store's size estimate. `what` names it ("entry", "blob").
  void drop_bad_entry(const Key& key, const char* what, std::uint64_t size, const std::string& why);
  // Writes `entry` to disk (unless read-only) and, when `share`, queues it for the remote.
  void store(const Key& key, const Entry& entry, bool share = true);
  void count(const std::function<void(Stats&)>& update);
  // Store reliability (store_stats.hpp, lock.hpp, gc.hpp): adds this process's counters not yet
  // persisted (and the pending store-size deltas) to the store's counters. With `totals_needed`,
  // under the stats lock, returning the new totals; else appended to the journal (nullopt).
  std::optional<Counters> flush_stats(bool totals_needed);
  // After a write: trims the written key's group when the store is over its size bound.
  void evict_if_over(const Key& key, const Counters& totals);

  Config config_;
  MemoryTier memory_;
  DiskTier disk_;
  mutable std::mutex stats_mutex_;
  Stats stats_;
  std::atomic<bool> warned_write_{false};
  std::array<std::mutex, 64> key_mutexes_;  // in-process single flight, striped by key
  mutable std::once_flag arch_once_;
  mutable std::string arch_;
  StoreStats store_stats_;
  std::mutex flush_mutex_;
  Stats flushed_;  // what flush_stats has persisted
  std::mutex finish_mutex_;
  Stats reported_;                              // what finish() has reported to CUBBY_STATS_FILE
  std::atomic<std::int64_t> last_flush_ns_{0};  // steady clock
  std::atomic<std::int64_t> pending_store_bytes_{0};  // size-estimate deltas not yet persisted
  std::atomic<std::int64_t> pending_store_entries_{0};
  std::atomic<bool> full_gc_tried_{false};  // a whole-store gc when a group trim found nothing
  std::atomic<bool> warned_remote_entry_{false};
  std::unique_ptr<RemoteTier> remote_;                 // null without CUBBY_REMOTE
  std::atomic<std::int64_t> backfill_base_bytes_{-1};  // persisted store_bytes; -1: not read yet
  std::unique_ptr<Background> background_;             // remote backfills, drained by ~Cache
};

}  // namespace cubby
