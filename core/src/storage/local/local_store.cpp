#include "storage/local/local_store.hpp"

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <utility>

#include "format/entry_in_place.hpp"
#include "storage/local/gc.hpp"

namespace cubby {
namespace {

using Clock = std::chrono::steady_clock;

// How often hits persist this process's counters into the store.
constexpr std::chrono::nanoseconds kFlushEvery = std::chrono::seconds(5);

}  // namespace

LocalStore::LocalStore(const Config& config, std::function<Stats()> snapshot)
    : read_only_(config.read_only || config.disabled),
      max_size_(config.max_size),
      disk_(config.dir),
      store_stats_(config.dir),
      snapshot_(std::move(snapshot)),
      last_flush_ns_(Clock::now().time_since_epoch().count()) {}

std::shared_ptr<const Entry> LocalStore::get(const Key& key, const char* what,
                                             const EntryCheck& check) {
  auto bytes = disk_.get(key);
  if (!bytes) {
    // A link, FIFO, device or oversized file at the entry path (never read): a bad entry.
    if (bytes.error().code == Errc::corrupt) drop(key, what, 0, bytes.error().message);
    return nullptr;  // else a disk that fails is a miss
  }
  if (!bytes->has_value()) return nullptr;
  const std::uint64_t size = (*bytes)->size();
  counted_.add(Stat::bytes_read, size);
  auto entry = decode_entry_in_place(std::move(**bytes), key);
  if (!entry && entry.error().code == Errc::not_found) return nullptr;  // another release's
  if (entry) {
    auto valid = check(*entry);
    if (valid) return std::make_shared<const Entry>(std::move(entry).value());
    drop(key, what, size, valid.error().message);
  } else {
    drop(key, what, size, entry.error().message);
  }
  return nullptr;
}

void LocalStore::put(const Key& key, const std::string& bytes, Persist persist_when) {
  if (read_only_) return;
  auto written = disk_.put(key, bytes);
  if (!written) {
    note_failed_write(written.error().message);
    return;
  }
  counted_.add(Stat::bytes_written, bytes.size());
  pending_bytes_ += static_cast<std::int64_t>(bytes.size());
  pending_entries_ += 1;
  // Lazily: no stats lock per write; only a store that may be over its bound pays for totals.
  if (persist_when == Persist::lazily &&
      persisted_bytes() + pending_bytes_.load() <= static_cast<std::int64_t>(max_size_)) {
    return;
  }
  if (auto totals = persist(true)) {
    evict_if_over(key, *totals);
    // The persisted size moved (this write, other processes', a trim): re-read when next needed.
    persisted_bytes_.store(-1);
  }
}

std::int64_t LocalStore::persisted_bytes() {
  std::int64_t base = persisted_bytes_.load();
  if (base >= 0) return base;
  base = 0;
  if (auto persisted = store_stats_.read()) {
    if (auto found = persisted->find("store_bytes"); found != persisted->end()) {
      base = found->second;
    }
  }
  persisted_bytes_.store(base);
  return base;
}

void LocalStore::flush(bool force) {
  const std::int64_t now = Clock::now().time_since_epoch().count();
  if (!force && now - last_flush_ns_.load(std::memory_order_relaxed) <= kFlushEvery.count()) {
    return;
  }
  try {
    (void)persist(false);
  } catch (...) {  // counters are advisory: never let them escape (flush runs in ~Cache)
  }
}

std::optional<Counters> LocalStore::persist(bool totals_needed) {
  if (read_only_) return std::nullopt;
  std::lock_guard lock(flush_mutex_);
  last_flush_ns_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  const Stats now = snapshot_();
  Counters delta = persisted_delta(flushed_, now);
  const std::int64_t store_bytes = pending_bytes_.exchange(0);
  const std::int64_t store_entries = pending_entries_.exchange(0);
  if (store_bytes != 0) delta["store_bytes"] = store_bytes;
  if (store_entries != 0) delta["store_entries"] = store_entries;
  if (delta.empty()) return std::nullopt;
  const auto keep_pending = [&] {  // not persisted: the deltas wait for the next flush
    pending_bytes_ += store_bytes;
    pending_entries_ += store_entries;
  };
  if (!totals_needed) {
    // The cheap path (exit, periodic flushes of hits): one O_APPEND write to the journal.
    if (store_stats_.append(delta)) {
      flushed_ = now;
    } else {
      keep_pending();
    }
    return std::nullopt;
  }
  auto totals = store_stats_.add(delta);
  if (!totals) {
    keep_pending();
    return std::nullopt;
  }
  flushed_ = now;
  return std::move(totals).value();
}

void LocalStore::evict_if_over(const Key& key, const Counters& totals) {
  const auto found = totals.find("store_bytes");
  if (found == totals.end() || found->second <= static_cast<std::int64_t>(max_size_)) return;
  GcOptions options;
  options.max_size = max_size_;
  options.wait_for_lock = false;
  auto trimmed = trim_group(disk_, key.bytes[0] >> 4, options);
  // Nothing to evict in this group although the estimate is over: the estimate drifted (killed
  // writers, removed files) or other groups hold the excess. One whole-store pass per process
  // re-measures the store and evicts by exact LRU.
  if (trimmed && !trimmed->skipped && trimmed->evicted == 0 && !full_gc_tried_.exchange(true)) {
    (void)collect_garbage(disk_, options);
  }
}

void LocalStore::drop(const Key& key, const char* what, std::uint64_t size,
                      const std::string& why) {
  std::fprintf(stderr,
               "cubby: %s %s in %s is corrupt (%s); removing it (it is stored again when next "
               "compiled or saved)\n",
               what, key.hex().c_str(), disk_.root().c_str(), why.c_str());
  counted_.add(Stat::corrupt);
  if (!read_only_ && disk_.remove(key) && size > 0) {
    pending_bytes_ -= static_cast<std::int64_t>(size);
    pending_entries_ -= 1;
  }
}

void LocalStore::put_later(const Key& key, std::string bytes) {
  auto shared = std::make_shared<std::string>(std::move(bytes));
  auto write = [this, key, shared] { put(key, *shared, Persist::lazily); };
  if (!background_.post(write)) write();  // the queue is full: the caller writes it
}

Result<void> LocalStore::check_removable() const {
  if (!read_only_) return {};
  return fail(Errc::invalid_argument, "the store ", disk_.root().string(),
              " is read-only (CUBBY_READ_ONLY); nothing can be removed from it");
}

Result<bool> LocalStore::remove(const Key& key) {
  if (auto removable = check_removable(); !removable) return removable.error();
  struct stat st {};
  if (::lstat(disk_.path_of(key).c_str(), &st) != 0) return false;
  if (auto removed = disk_.remove(key); !removed) return std::move(removed).error();
  pending_bytes_ -= S_ISREG(st.st_mode) ? static_cast<std::int64_t>(st.st_size) : 0;
  pending_entries_ -= S_ISREG(st.st_mode) ? 1 : 0;
  return true;
}

void LocalStore::note_failed_write(const std::string& why) {
  counted_.add(Stat::failed_writes);
  if (!warned_write_.exchange(true)) {
    std::fprintf(stderr,
                 "cubby: cannot write to the store %s (%s); compiled kernels stay usable but are "
                 "not cached (this warning is shown once)\n",
                 disk_.root().c_str(), why.c_str());
  }
}

}  // namespace cubby
