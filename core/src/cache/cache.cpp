#include "cubby/cache.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>

#include "key/key_inputs.hpp"
#include "util/background.hpp"
#include "format/blob.hpp"
#include "cubby/cubin.hpp"
#include "cubby/driver.hpp"
#include "storage/local/gc.hpp"
#include "storage/local/lock.hpp"
#include "storage/local/verify.hpp"
#include "stats/stats_report.hpp"

namespace cubby {
namespace {

using Clock = std::chrono::steady_clock;

// How often hits persist this process's counters into the store (store_stats.hpp).
constexpr std::chrono::nanoseconds kFlushEvery = std::chrono::seconds(5);
// How long a miss waits for another process compiling the same key before compiling itself.
constexpr std::chrono::milliseconds kCompileLockWait = std::chrono::minutes(5);

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The sorted, de-duplicated name expressions of a request (what an entry under its key holds).
std::vector<std::string> distinct(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// Says once per process that a program is compiled without the store because of `directives`.
void warn_unresolvable(const std::string& program, const std::vector<std::string>& directives) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  std::fprintf(stderr,
               "cubby: %s includes a header through a macro (%s); the cache cannot know which "
               "file that reads, so this program is compiled without the cache. Spell the "
               "include with a literal name (#include \"file.cuh\") to cache it (this warning "
               "is shown once)\n",
               program.c_str(), directives.front().c_str());
}

// Checks that an entry stored under a key derived from `names` is the entry for them: it holds a
// lowered name for each expression, and each lowered name is a symbol of its payload.
Result<void> validate(const Entry& entry, const std::vector<std::string>& names) {
  if (entry.lowered_names.size() != names.size()) {
    return fail(Errc::corrupt, "entry holds ", std::to_string(entry.lowered_names.size()),
                " lowered names, the request has ", std::to_string(names.size()));
  }
  for (const std::string& name : names) {
    if (!entry.lowered_names.contains(name)) {
      return fail(Errc::corrupt, "entry has no lowered name for '", name, "'");
    }
  }
  return verify_entry_symbols(entry);
}

// The entry a tier holds for `key` (a request for `names`): decode_entry(bytes, key), then
// validate. Errc::not_found (an entry of another format version) is a miss, anything else a
// defect.
Result<Entry> checked_entry(std::string_view bytes, const Key& key,
                            const std::vector<std::string>& names) {
  auto entry = decode_entry(bytes, key);
  if (!entry) return entry;
  if (auto valid = validate(*entry, names); !valid) return valid.error();
  return entry;
}

}  // namespace

const char* source_name(Source source) noexcept {
  switch (source) {
    case Source::memory:
      return "memory";
    case Source::disk:
      return "disk";
    case Source::remote:
      return "remote";
    case Source::compiled:
      return "compiled";
  }
  return "unknown";
}

const std::string& CacheResult::lowered_name(std::string_view name_expression) const {
  const auto found = entry->lowered_names.find(std::string(name_expression));
  if (found == entry->lowered_names.end()) {
    throw Error(Errc::name_not_found, "'" + std::string(name_expression) +
                                          "' was not among the name expressions of this compile; "
                                          "add it to the request's name_expressions");
  }
  return found->second;
}

Cache::Cache(Config config)
    : config_(std::move(config)),
      memory_(config_.memory_entries),
      disk_(config_.dir),
      store_stats_(config_.dir),
      last_flush_ns_(Clock::now().time_since_epoch().count()),
      remote_(config_.disabled ? nullptr : open_remote_tier(config_)),
      background_(std::make_unique<Background>()) {
  // A store folder without entries is a fresh runner: every lookup goes to the remote, so its
  // connection opens while the caller gets ready (a warm store never connects unless it misses).
  std::error_code ignored;
  if (remote_ && !std::filesystem::exists(disk_.entries_dir(), ignored)) {
    remote_->connect_ahead();
  }
}

Cache::Cache() : Cache(Config::from_env().value_or_throw()) {}

Cache::~Cache() { finish(); }

void Cache::finish() {
  background_->drain();  // remote backfills land before the counters are persisted
  // Queued remote writes get a bounded chance to finish, so that they are shared and counted.
  if (remote_) {
    remote_->drain(std::max<std::chrono::milliseconds>(
        std::chrono::seconds(1), 4 * std::chrono::milliseconds(config_.remote_timeout_ms)));
  }
  {
    // The stats file's lines are summed: each call reports what is new since the last.
    std::lock_guard lock(finish_mutex_);
    const Stats now = stats();
    report_stats_to_file(difference(now, reported_));
    reported_ = now;
  }
  try {
    (void)flush_stats(false);
  } catch (...) {  // counters are advisory: never let them escape (finish runs in ~Cache)
  }
}

std::string Cache::default_arch() const {
  std::call_once(arch_once_, [this] {
    if (!config_.default_arch.empty()) {
      arch_ = config_.default_arch;
    } else if (auto arch = gpu_arch()) {
      arch_ = *arch;
    } else {
      arch_ = "sm_90";
    }
  });
  return arch_;
}

KeyInputs Cache::key_inputs(const CompileRequest& request) const {
  auto nvrtc = locate_nvrtc();
  if (!nvrtc) throw Error(std::move(nvrtc).error());
  return key_inputs_for(request, request.arch.empty() ? default_arch() : request.arch, *nvrtc,
                        config_.base_dir);
}

Key Cache::key_of(const CompileRequest& request) const { return derive_key(key_inputs(request)); }

Stats Cache::stats() const {
  Stats out;
  {
    std::lock_guard lock(stats_mutex_);
    out = stats_;
  }
  // What the remote tier counted itself (failures, rejected values, writes).
  if (remote_) out += remote_->counters();
  return out;
}

void Cache::count(const std::function<void(Stats&)>& update) {
  {
    std::lock_guard lock(stats_mutex_);
    update(stats_);
  }
  // Hits persist their counters at most every kFlushEvery: no extra syscall on the hit path.
  const std::int64_t now = Clock::now().time_since_epoch().count();
  if (now - last_flush_ns_.load(std::memory_order_relaxed) > kFlushEvery.count()) {
    (void)flush_stats(false);
  }
}

std::optional<Counters> Cache::flush_stats(bool totals_needed) {
  if (config_.disabled || config_.read_only) return std::nullopt;
  std::lock_guard flush(flush_mutex_);
  last_flush_ns_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  const Stats now = stats();
  Counters delta = persisted_delta(flushed_, now);
  const std::int64_t store_bytes = pending_store_bytes_.exchange(0);
  const std::int64_t store_entries = pending_store_entries_.exchange(0);
  if (store_bytes != 0) delta["store_bytes"] = store_bytes;
  if (store_entries != 0) delta["store_entries"] = store_entries;
  if (delta.empty()) return std::nullopt;
  if (!totals_needed) {
    // The cheap path (exit, periodic flushes of hits): one O_APPEND write to the journal.
    if (store_stats_.append(delta)) {
      flushed_ = now;
    } else {
      pending_store_bytes_ += store_bytes;
      pending_store_entries_ += store_entries;
    }
    return std::nullopt;
  }
  auto totals = store_stats_.add(delta);
  if (!totals) {  // not persisted: keep the deltas for the next flush
    pending_store_bytes_ += store_bytes;
    pending_store_entries_ += store_entries;
    return std::nullopt;
  }
  flushed_ = now;
  return std::move(totals).value();
}

void Cache::evict_if_over(const Key& key, const Counters& totals) {
  const auto found = totals.find("store_bytes");
  if (found == totals.end() || found->second <= static_cast<std::int64_t>(config_.max_size)) {
    return;
  }
  GcOptions options;
  options.max_size = config_.max_size;
  options.wait_for_lock = false;
  auto trimmed = trim_group(disk_, key.bytes[0] >> 4, options);
  // Nothing to evict in this group although the estimate is over: the estimate drifted (killed
  // writers, removed files) or other groups hold the excess. One whole-store pass per process
  // re-measures the store and evicts by exact LRU.
  if (trimmed && !trimmed->skipped && trimmed->evicted == 0 && !full_gc_tried_.exchange(true)) {
    (void)collect_garbage(disk_, options);
  }
}

std::shared_ptr<const Entry> Cache::from_disk(const Key& key, const KeyInputs& inputs) {
  auto bytes = disk_.get(key);
  if (!bytes) {
    // A link, FIFO, device or oversized file at the entry path (never read): a bad entry.
    if (bytes.error().code == Errc::corrupt) drop_bad_entry(key, "entry", 0, bytes.error().message);
    return nullptr;  // else a tier that fails is a miss
  }
  if (!bytes->has_value()) return nullptr;
  const std::uint64_t size = (*bytes)->size();
  count([&](Stats& s) { s.bytes_read += size; });
  auto entry = checked_entry(**bytes, key, distinct(inputs.name_expressions));
  if (!entry && entry.error().code == Errc::not_found) return nullptr;  // another release's: a miss
  if (!entry) {
    drop_bad_entry(key, "entry", size, entry.error().message);
    return nullptr;
  }
  return std::make_shared<const Entry>(std::move(entry).value());
}

std::shared_ptr<const Entry> Cache::from_remote(const Key& key, const KeyInputs& inputs,
                                                std::string& bytes_out) {
  const auto start = Clock::now();
  auto bytes = remote_->get(key);
  std::shared_ptr<const Entry> found;
  std::uint64_t size = 0;
  bool rejected = false;
  if (bytes && bytes->has_value()) {
    size = (*bytes)->size();
    auto entry = checked_entry(**bytes, key, distinct(inputs.name_expressions));
    if (entry) {
      found = std::make_shared<const Entry>(std::move(entry).value());
      bytes_out = std::move(**bytes);
    } else if (entry.error().code != Errc::not_found) {  // another release's entry is a miss
      // Never used, never removed: the compile that follows overwrites it (unless read mode).
      rejected = true;
      if (!warned_remote_entry_.exchange(true)) {
        const char* fix = config_.remote_read_only || config_.read_only
                              ? "a process that writes the remote replaces it when it compiles "
                                "this kernel"
                              : "the upload of this compile replaces it";
        std::fprintf(stderr,
                     "cubby: remote entry %s from %s is not valid (%s); it is not used: the kernel "
                     "is compiled here and %s (counted as rejected; shown once)\n",
                     key.hex().c_str(), remote_->location().c_str(), entry.error().message.c_str(),
                     fix);
      }
    }
  }
  const double ms = ms_since(start);
  count([&](Stats& s) {
    s.remote_ms += ms;
    s.bytes_read += size;
    if (!found) ++s.remote_misses;
    if (rejected) ++s.remote_rejected;
  });
  return found;
}

void Cache::store(const Key& key, const Entry& entry, bool share) {
  if (config_.read_only) return;
  const std::string bytes = encode_entry(key, entry);
  if (share && remote_) remote_->put_later(key, bytes);
  auto written = disk_.put(key, bytes);
  if (written) {
    count([&](Stats& s) { s.bytes_written += bytes.size(); });
    pending_store_bytes_ += static_cast<std::int64_t>(bytes.size());
    pending_store_entries_ += 1;
    // Persist now: the size estimate decides eviction, and writes are rare next to compiles.
    if (auto totals = flush_stats(true)) evict_if_over(key, *totals);
    return;
  }
  note_failed_write(written.error().message);
}

void Cache::drop_bad_entry(const Key& key, const char* what, std::uint64_t size,
                           const std::string& why) {
  std::fprintf(stderr,
               "cubby: %s %s in %s is corrupt (%s); removing it (it is stored again when next "
               "compiled or saved)\n",
               what, key.hex().c_str(), disk_.root().c_str(), why.c_str());
  count([](Stats& s) { ++s.corrupt; });
  if (!config_.read_only && disk_.remove(key) && size > 0) {
    pending_store_bytes_ -= static_cast<std::int64_t>(size);
    pending_store_entries_ -= 1;
  }
}

void Cache::note_failed_write(const std::string& why) {
  count([](Stats& s) { ++s.failed_writes; });
  if (!warned_write_.exchange(true)) {
    std::fprintf(stderr,
                 "cubby: cannot write to the store %s (%s); compiled kernels stay usable but are "
                 "not cached (this warning is shown once)\n",
                 disk_.root().c_str(), why.c_str());
  }
}

void Cache::backfill(const Key& key, const std::string& bytes) {
  if (config_.read_only) return;
  auto written = disk_.put(key, bytes);
  if (!written) {
    note_failed_write(written.error().message);
    return;
  }
  const auto size = static_cast<std::int64_t>(bytes.size());
  count([&](Stats& s) { s.bytes_written += bytes.size(); });
  pending_store_bytes_ += size;
  pending_store_entries_ += 1;
  // No stats lock per backfill (a fresh runner backfills every lookup): the counters reach the
  // journal at exit or with the next periodic flush. The size bound is checked against the
  // persisted estimate (read once, without a lock) plus this process's writes not yet persisted;
  // only a store that may be over it pays for exact totals and a trim.
  std::int64_t base = backfill_base_bytes_.load();
  if (base < 0) {
    base = 0;
    if (auto persisted = store_stats_.read()) {
      if (auto found = persisted->find("store_bytes"); found != persisted->end()) {
        base = found->second;
      }
    }
    backfill_base_bytes_.store(base);
  }
  if (base + pending_store_bytes_.load() <= static_cast<std::int64_t>(config_.max_size)) return;
  if (auto totals = flush_stats(true)) {
    evict_if_over(key, *totals);
    backfill_base_bytes_.store(-1);  // re-read after the trim
  }
}

std::optional<CacheResult> Cache::load_blob(std::string_view ns, std::string_view name) {
  const auto start = Clock::now();
  check_blob_name(ns, name).value_or_throw();
  CacheResult result;
  result.key = blob_key(ns, name);
  auto hit = [&](std::shared_ptr<const Entry> entry, Source tier) {
    const double saved = static_cast<double>(entry->compile_us) / 1000.0;
    count([&](Stats& s) {
      (tier == Source::memory ? s.hits_memory : s.hits_disk) += 1;
      s.compile_ms_saved += saved;
    });
    result.entry = std::move(entry);
    result.tier = tier;
    result.hit = true;
    result.elapsed_ms = ms_since(start);
    return result;
  };
  if (config_.disabled) return std::nullopt;
  if (auto entry = memory_.get(result.key)) return hit(std::move(entry), Source::memory);
  auto bytes = disk_.get(result.key);
  if (!bytes && bytes.error().code == Errc::corrupt) {
    drop_bad_entry(result.key, "blob", 0, bytes.error().message);  // not a regular file
  } else if (bytes && bytes->has_value()) {
    const std::uint64_t size = (*bytes)->size();
    count([&](Stats& s) { s.bytes_read += size; });
    auto entry = decode_entry(**bytes, result.key);
    if (entry && is_blob_of(*entry, ns, name)) {
      auto shared = std::make_shared<const Entry>(std::move(entry).value());
      memory_.put(result.key, shared);
      return hit(std::move(shared), Source::disk);
    }
    // An entry of another format version is a plain miss (the next store_blob replaces it).
    if (entry || entry.error().code != Errc::not_found) {
      drop_bad_entry(result.key, "blob", size,
                     entry ? "it is not the blob it is stored as" : entry.error().message);
    }
  }
  count([](Stats& s) { ++s.misses; });
  return std::nullopt;
}

CacheResult Cache::store_blob(std::string_view ns, std::string_view name, std::string_view payload,
                              double compile_ms) {
  const auto start = Clock::now();
  check_blob_name(ns, name).value_or_throw();
  CacheResult result;
  result.key = blob_key(ns, name);
  const auto compile_us = compile_ms > 0 ? static_cast<std::uint64_t>(compile_ms * 1000.0) : 0;
  auto entry = std::make_shared<const Entry>(blob_entry(ns, name, payload, compile_us));
  if (!config_.disabled) {
    store(result.key, *entry, false);  // blobs are looked up locally only
    memory_.put(result.key, entry);
  }
  result.entry = std::move(entry);
  result.tier = Source::compiled;
  result.hit = false;
  result.elapsed_ms = ms_since(start);
  return result;
}

CacheResult Cache::compile(const CompileRequest& request) {
  const auto start = Clock::now();
  CompileRequest resolved = request;
  if (resolved.arch.empty()) resolved.arch = default_arch();
  const KeyInputs inputs = key_inputs(resolved);
  CacheResult result;
  result.key = derive_key(inputs);

  auto finish = [&](std::shared_ptr<const Entry> entry, Source tier) {
    result.entry = std::move(entry);
    result.tier = tier;
    result.hit = tier != Source::compiled;
    result.elapsed_ms = ms_since(start);
    return result;
  };
  auto hit = [&](std::shared_ptr<const Entry> entry, Source tier) {
    const double saved = static_cast<double>(entry->compile_us) / 1000.0;
    count([&](Stats& s) {
      (tier == Source::memory ? s.hits_memory
                              : (tier == Source::remote ? s.hits_remote : s.hits_disk)) += 1;
      s.compile_ms_saved += saved;
    });
    return finish(std::move(entry), tier);
  };

  // A program with an include the scan cannot name has no trustworthy key (key/include_scan.hpp, HeaderScan):
  // it is compiled without the store, never looked up or stored under a partial key.
  const bool use_store = !config_.disabled && inputs.unresolvable.empty();
  if (!config_.disabled && !use_store) warn_unresolvable(request.program_name, inputs.unresolvable);
  if (use_store) {
    if (auto entry = memory_.get(result.key)) return hit(std::move(entry), Source::memory);
  }
  // One compile per key at a time in this process: later callers wait and then hit memory.
  std::lock_guard flight(key_mutexes_[result.key.bytes[0] % key_mutexes_.size()]);
  // One compile per key at a time across processes: the per-key file lock. A waiter finds the
  // entry its owner stored; a dead owner's lock is released by the kernel; a wait that expires
  // (a hung owner) compiles anyway. A store whose locks cannot be created compiles unlocked.
  std::optional<FileLock> key_lock;
  if (use_store) {
    if (auto entry = memory_.get(result.key)) return hit(std::move(entry), Source::memory);
    if (auto entry = from_disk(result.key, inputs)) {
      memory_.put(result.key, entry);
      return hit(std::move(entry), Source::disk);
    }
    // The remote is asked before the compile lock: a hit needs no lock, no lock folder and no
    // wait. The verified bytes are written to disk in the background (a crash before they land
    // loses a cache fill, never correctness); they are not sent back to the remote.
    if (remote_) {
      std::string bytes;
      if (auto entry = from_remote(result.key, inputs, bytes)) {
        memory_.put(result.key, entry);
        if (!config_.read_only) {
          auto shared = std::make_shared<std::string>(std::move(bytes));
          const Key key = result.key;
          if (!background_->post([this, key, shared] { backfill(key, *shared); })) {
            backfill(key, *shared);  // the queue is full: the caller writes it
          }
        }
        return hit(std::move(entry), Source::remote);
      }
    }
    if (!config_.read_only) {
      auto locked = FileLock::acquire(disk_.lock_path_of(result.key), kCompileLockWait);
      if (locked && locked->has_value()) {
        key_lock = std::move(*locked);
        if (auto entry = from_disk(result.key, inputs)) {
          memory_.put(result.key, entry);
          return hit(std::move(entry), Source::disk);
        }
      } else if (locked) {
        std::fprintf(stderr,
                     "cubby: waited %lld s for another process compiling entry %s in %s; "
                     "compiling it here too\n",
                     static_cast<long long>(kCompileLockWait.count() / 1000),
                     result.key.hex().c_str(), disk_.root().c_str());
      }
    }
    count([](Stats& s) { ++s.misses; });
  }

  auto compiled = compile_nvrtc(resolved);
  if (!compiled) {
    count([](Stats& s) { ++s.compile_failures; });
    throw Error(std::move(compiled).error());
  }
  auto entry = std::make_shared<const Entry>(std::move(compiled).value());
  const double compile_ms = static_cast<double>(entry->compile_us) / 1000.0;
  count([&](Stats& s) {
    ++s.compiles;
    s.compile_ms += compile_ms;
  });
  if (use_store) {
    store(result.key, *entry);
    memory_.put(result.key, entry);
  }
  return finish(std::move(entry), Source::compiled);
}

}  // namespace cubby
