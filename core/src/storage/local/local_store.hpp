// The local store of one Cache: the disk tier and its accounting. It owns the store's persisted
// counters (store_stats.hpp), the size estimate and bound (CUBBY_MAX_SIZE) with the trimming that
// keeps it (gc.hpp), the removal of bad entries, and the write-failure warning, so that the Cache
// is only the lookup sequence. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "cubby/config.hpp"
#include "cubby/entry.hpp"
#include "cubby/key.hpp"
#include "cubby/stats.hpp"
#include "stats/atomic_stats.hpp"
#include "storage/local/disk.hpp"
#include "storage/local/store_stats.hpp"
#include "util/background.hpp"

namespace cubby {

// A check of a decoded entry beyond its key (names, symbols, blob identity); a failure's message
// says what is wrong with it.
using EntryCheck = std::function<Result<void>(const Entry&)>;

class LocalStore {
 public:
  // When a write's counters reach the store (see put).
  enum class Persist { now, lazily };

  // The store at `config.dir` (nothing is read or created until used). `snapshot` returns the
  // process's counters, all of them: a flush persists their growth since the last flush.
  LocalStore(const Config& config, std::function<Stats()> snapshot);

  const DiskTier& disk() const { return disk_; }

  // The entry stored under `key`: decoded as `key`'s entry (decode_entry) and passing `check`.
  // An entry of another release is a plain miss; a failing disk is a miss. A bad entry (a link,
  // FIFO or oversized file at its path, corrupt, another key's, or failing `check`) is reported on
  // stderr as `what` ("entry", "blob"), counted `corrupt`, removed unless read-only, and taken
  // out of the size estimate; a miss.
  std::shared_ptr<const Entry> get(const Key& key, const char* what, const EntryCheck& check);

  // Writes `bytes` as `key`'s entry, unless read-only. A write that fails counts failed_writes
  // and warns once; the caller's result stays usable. Persist::now (compiles, saved blobs: rare
  // next to hits) persists the counters at once and trims the key's group when the store is over
  // its size bound; Persist::lazily (back-fills of remote hits: a fresh runner does one per
  // lookup) leaves the counters to the next flush and checks the bound against the persisted
  // estimate plus this process's writes, paying for exact totals only when it may be over.
  void put(const Key& key, const std::string& bytes, Persist persist);
  // put(key, bytes, Persist::lazily) on a background thread (Background: in order, off the
  // caller's path), for a back-fill of a remote hit: a crash before it lands loses a cache fill,
  // never correctness. Done at once when the queue is full. drain() waits for it.
  void put_later(const Key& key, std::string bytes);
  // Waits until every put_later queued so far has landed.
  void drain() { background_.drain(); }

  // Removes `key`'s entry (a blob its owner deletes) and takes it out of the size estimate;
  // whether there was one. Errc::invalid_argument for a read-only store (check_removable), Errc::io
  // when the file cannot be removed.
  Result<bool> remove(const Key& key);
  // Errc::invalid_argument, with a message that says so, when the store is read-only (or the
  // Cache disabled): nothing may be removed from it.
  Result<void> check_removable() const;

  // Appends the counters' growth since the last flush (and the size-estimate deltas) to the
  // store's journal: with `force`, now; else only when the last flush is over 5 s old (so that
  // hits cost no extra syscall). Never throws.
  void flush(bool force);

  // What the store counted itself: bytes_read, bytes_written, corrupt, failed_writes (the rest 0).
  Stats counters() const { return counted_.snapshot(); }

 private:
  // Adds the process's counters not yet persisted (and the pending size-estimate deltas) to the
  // store's counters: with `totals_needed` under the stats lock, returning the new totals; else
  // appended to the journal (nullopt). Nothing for a read-only store.
  std::optional<Counters> persist(bool totals_needed);
  // After a write: trims the written key's group when the store is over its size bound.
  void evict_if_over(const Key& key, const Counters& totals);
  // The persisted store_bytes, read once per trim cycle (for Persist::lazily).
  std::int64_t persisted_bytes();
  void drop(const Key& key, const char* what, std::uint64_t size, const std::string& why);
  void note_failed_write(const std::string& why);

  bool read_only_;
  std::uint64_t max_size_;
  DiskTier disk_;
  StoreStats store_stats_;
  std::function<Stats()> snapshot_;
  AtomicStats counted_;
  std::mutex flush_mutex_;
  Stats flushed_;                               // what persist() has persisted
  std::atomic<std::int64_t> last_flush_ns_{0};  // steady clock
  std::atomic<std::int64_t> pending_bytes_{0};  // size-estimate deltas not yet persisted
  std::atomic<std::int64_t> pending_entries_{0};
  std::atomic<std::int64_t> persisted_bytes_{-1};  // -1: not read yet
  std::atomic<bool> full_gc_tried_{false};  // a whole-store gc when a group trim found nothing
  std::atomic<bool> warned_write_{false};
  Background background_;  // last: destroyed (drained) first, while the rest is still there
};

}  // namespace cubby
