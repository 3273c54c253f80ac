#include "cubby/cache.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <utility>

#include "cache/cache_counters.hpp"
#include "cache/default_arch.hpp"
#include "cache/entry_check.hpp"
#include "cache/key_claims.hpp"
#include "cache/key_inputs.hpp"
#include "cubby/cubin.hpp"
#include "cuda/include_plan.hpp"
#include "cuda/nvrtc_compile.hpp"
#include "cuda/nvrtc_options.hpp"
#include "format/blob.hpp"
#include "format/recipe.hpp"
#include "key/include_scan.hpp"
#include "stats/stats_report.hpp"
#include "storage/local/gc.hpp"
#include "storage/local/local_store.hpp"
#include "storage/local/lock.hpp"
#include "storage/local/manifests.hpp"
#include "storage/local/memory.hpp"
#include "storage/local/pch_policy.hpp"
#include "storage/local/verify.hpp"
#include "storage/remote/read_ahead.hpp"
#include "storage/remote/remote.hpp"
#include "store/store.hpp"
#include "store/suite_recorder.hpp"
#include "store/suites.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

using Clock = std::chrono::steady_clock;

// How long a miss waits for another process compiling the same key before compiling itself: a
// live holder (its lock's heartbeat goes on, lock.hpp) for up to kCompileLockWait, one whose
// heartbeat stopped (a stopped process) for kStoppedHolder. Waiting for a live compiler is never
// slower than compiling again; past kCompileLockWait it is taken for hung.
constexpr std::chrono::milliseconds kCompileLockWait = std::chrono::minutes(2);
constexpr std::chrono::milliseconds kStoppedHolder = std::chrono::seconds(10);

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Says once per process that a wait for another process's compile was given up.
void warn_wait_given_up(bool holder_stopped, std::chrono::milliseconds waited, const char* what,
                        const std::string& key, const std::string& root) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  const std::string why =
      holder_stopped ? "stopped: its lock's heartbeat ended (SIGSTOP, a debugger, a frozen machine)"
                     : "did not finish within " + std::to_string(waited.count() / 1000) + " s";
  std::fprintf(stderr,
               "cubby: %s %s is being produced by another process in %s, which %s; producing it "
               "here too (counted in waits_given_up; shown once)\n",
               what, key.c_str(), root.c_str(), why.c_str());
}

// The program's name as NVRTC calls it ("default_program" when a request clears the default).
std::string program_of(const CompileRequest& request) {
  return request.program_name.empty() ? "default_program" : request.program_name;
}

// Why `inputs` (of `request`, under `plan`) must not be looked up or stored, with what the
// summaries show of it in `detail`; Uncached::none when they may. A program whose scan cannot
// name an include, or with an option the plan cannot model, has no trustworthy key
// (key/include_scan.hpp, HeaderScan): it is compiled without the store, never looked up or stored
// under a partial key.
Uncached keyless_reason(const Config& config, const CompileRequest& request,
                        const IncludePlan& plan, const KeyInputs& inputs, std::string& detail) {
  const std::string name = program_of(request);
  const std::string program = " (program " + name + ")";
  if (config.disabled) {
    detail = "program " + name;
    return Uncached::store_disabled;
  }
  // inputs.unresolvable: the scan's strings, then the plan's unmodelled options (key_inputs.hpp).
  if (inputs.unresolvable.size() > plan.unmodelled.size()) {
    detail = inputs.unresolvable.front() + program;
    return Uncached::unnamed_include;
  }
  if (!plan.unmodelled.empty()) {
    detail = plan.unmodelled.front() + program;
    return Uncached::unkeyable_option;
  }
  return Uncached::none;
}

// Says once per process and reason that a program is compiled without the store (the reasons
// a user did not choose).
void warn_uncached(Uncached reason, const std::string& detail) {
  static std::array<std::atomic<bool>, kUncached.size()> warned{};
  if (reason != Uncached::unnamed_include && reason != Uncached::unkeyable_option) return;
  if (warned[static_cast<std::size_t>(reason)].exchange(true)) return;
  const char* fix =
      reason == Uncached::unnamed_include
          ? "Spell that include with a literal name, or with macros the scan can expand "
            "(the detail says which bound it met), to cache it"
          : "Pass include folders and files as NVRTC options (-I, -include) "
            "instead of -Xcudafe to cache it";
  std::fprintf(stderr,
               "cubby: a program is compiled without the store: %s (%s); it is counted in "
               "uncached_%s. %s (this warning is shown once)\n",
               std::string(uncached_info(reason).label).c_str(), detail.c_str(),
               std::string(uncached_info(reason).name).c_str(), fix);
}

// Says once per process that a compile's result was not stored because a header changed.
void warn_headers_changed(const std::string& program) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  std::fprintf(stderr,
               "cubby: a header of %s changed while NVRTC compiled it; the result is used but "
               "not stored (the next compile stores it; this warning is shown once)\n",
               program.c_str());
}

// The entry a remote holds for `key`: decode_entry(bytes, key), then `check`. Errc::not_found (an
// entry of another format version) is a miss, anything else a defect.
Result<Entry> checked_entry(std::string_view bytes, const Key& key,
                            const std::function<Result<void>(const Entry&)>& check) {
  auto entry = decode_entry(bytes, key);
  if (!entry) return entry;
  if (auto valid = check(*entry); !valid) return valid.error();
  return entry;
}

// Tells a prefetch of the config's suite that waits for its run's first miss (warm/first_miss.hpp)
// that there was one: the suite's miss file is touched at every miss (a few system calls beside a
// compile; a process may serve several runs, each with its own prefetch).
void signal_miss(const Config& config) {
  if (config.suite.empty() || !config.prefetch || config.read_only || config.disabled) return;
  touch_suite_miss(config.dir, config.suite);
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
      memory_(std::make_unique<MemoryTier>(config_.memory_entries)),
      local_(std::make_unique<LocalStore>(config_, [this] { return stats(); })),
      remote_(config_.disabled ? nullptr : open_remote_tier(config_)),
      counters_(std::make_unique<CacheCounters>()),
      claims_(std::make_unique<KeyClaims>()),
      arch_(std::make_unique<DefaultArch>(config_.default_arch)),
      pch_(std::make_unique<PchPolicy>(config_)),
      // The header scans' files between processes live in the store (scan_place.hpp).
      keys_(std::make_unique<KeyDeriver>(
          config_.base_dir, config_.disabled ? std::filesystem::path() : config_.dir / "tmp")) {
  if (!config_.suite.empty() && !config_.disabled && !config_.read_only) {
    recorder_ = std::make_unique<SuiteRecorder>(config_.suite, config_.dir, config_.base_dir);
  }
  // A store folder without entries is a fresh runner: every lookup goes to the remote, so its
  // connection opens while the caller gets ready (a warm store never connects unless it misses),
  // and the entries its suite's last run used are fetched ahead of its lookups.
  std::error_code ignored;
  if (remote_ && !std::filesystem::exists(local_->disk().entries_dir(), ignored)) {
    remote_->connect_ahead();
    if (!config_.suite.empty() && config_.remote_read_ahead && !config_.read_only) {
      auto read_ahead = std::make_unique<ReadAheadRemote>(
          std::move(remote_),
          [root = config_.dir, suite = config_.suite](Remote& remote) {
            return read_ahead_plan(root, suite, remote);
          },
          std::chrono::milliseconds(config_.remote_timeout_ms));
      read_ahead_ = read_ahead.get();
      remote_ = std::move(read_ahead);
    }
  }
}

Cache::Cache() : Cache(Config::from_env().value_or_throw()) {}

Cache::~Cache() { finish(); }

void Cache::finish() {
  // Before the recorder merges this run's keys into the file the read-ahead's plan merged into.
  if (read_ahead_ != nullptr) read_ahead_->stop();
  if (recorder_) recorder_->save(remote_.get());
  local_->drain();  // remote backfills land before the counters are persisted
  // Queued remote writes get a bounded chance to finish, so that they are shared and counted.
  if (remote_) remote_->drain();
  counters_->report([this] { return stats(); });
  local_->flush(true);
}

std::string Cache::default_arch() const { return arch_->get(); }

namespace {

// `request`'s key as `keys` derives it, for `default_arch` when the request names none.
PreparedKey prepare_for(const KeyDeriver& keys, const std::string& default_arch,
                        const CompileRequest& request) {
  const NvrtcLibrary nvrtc = locate_nvrtc().value_or_throw();
  return keys.prepare(request, plan_includes(request, nvrtc.include_dir),
                      request.arch.empty() ? default_arch : request.arch, nvrtc);
}

}  // namespace

KeyInputs Cache::key_inputs(const CompileRequest& request) const {
  return prepare_for(*keys_, default_arch(), request).full();
}

Key Cache::key_of(const CompileRequest& request) const {
  return prepare_for(*keys_, default_arch(), request).key();
}

Result<Key> Cache::storable_key(const CompileRequest& request) const {
  if (auto checked = check_last_option_has_its_value(request.options); !checked) {
    return checked.error();
  }
  CompileRequest resolved = request;
  if (resolved.arch.empty()) resolved.arch = default_arch();
  const NvrtcLibrary nvrtc = locate_nvrtc().value_or_throw();
  const IncludePlan plan = plan_includes(resolved, nvrtc.include_dir);
  const PreparedKey prepared = keys_->prepare(resolved, plan, resolved.arch, nvrtc);
  std::string detail;
  const Uncached why = keyless_reason(config_, request, plan, prepared.inputs, detail);
  if (why != Uncached::none) {
    return fail(Errc::invalid_argument,
                "the program has no key that covers what it reads: ", uncached_info(why).label,
                " (", detail, "); compile it without the store");
  }
  return prepared.key();
}

Stats Cache::stats() const {
  Stats out = counters_->snapshot();
  // What the tiers counted themselves (bytes, corrupt entries, failed writes; remote failures,
  // rejected values, writes).
  out += local_->counters();
  if (remote_) out += remote_->counters();
  return out;
}

void Cache::count(const std::function<void(Stats&)>& update) {
  counters_->update(update);
  local_->flush(false);  // at most every few seconds: no extra syscall on the hit path
}

void Cache::count_uncached(Uncached reason, const std::string& detail) {
  if (reason == Uncached::none) return;
  note_uncached_detail(reason, detail);
  count([reason](Stats& s) {
    ++s.programs;
    ++(s.*uncached_info(reason).count);
  });
}

void Cache::count_hit(const Entry& entry, Source tier) {
  const double saved = static_cast<double>(entry.compile_us) / 1000.0;
  count([&](Stats& s) {
    (tier == Source::memory ? s.hits_memory
                            : (tier == Source::remote ? s.hits_remote : s.hits_disk)) += 1;
    s.compile_ms_saved += saved;
  });
}

Cache::Found Cache::find_local(const Key& key, const char* what, const Check& check) {
  if (auto entry = memory_->get(key)) return {std::move(entry), Source::memory};
  if (auto entry = local_->get(key, what, check)) {
    memory_->put(key, entry);
    return {std::move(entry), Source::disk};
  }
  return {};
}

Cache::Found Cache::find(const Key& key, const KeyInputs& inputs,
                         std::optional<FileLock>& key_lock) {
  const std::vector<std::string> names = distinct_names(inputs.name_expressions);
  const auto check = [&names](const Entry& entry) { return validate_entry(entry, names); };
  if (Found found = find_local(key, "entry", check); found.entry) return found;
  // The remote is asked before the compile lock: a hit needs no lock, no lock folder and no wait.
  if (remote_) {
    if (auto entry = from_remote(key, check)) {
      memory_->put(key, entry);
      return {std::move(entry), Source::remote};
    }
  }
  if (Found found = claim(key, "entry", check, kCompileLockWait, key_lock); found.entry) {
    return found;
  }
  count([](Stats& s) { ++s.misses; });
  signal_miss(config_);
  return {};
}

// One producer per key at a time across processes: the per-key file lock. A waiter finds the
// entry its owner stored; a dead owner's lock is released by the kernel; a wait that expires
// (a hung owner) produces it anyway.
Cache::Found Cache::claim(const Key& key, const char* what, const Check& check,
                          std::chrono::milliseconds wait, std::optional<FileLock>& key_lock) {
  if (config_.read_only) return {};
  auto locked = FileLock::acquire_from_live(local_->disk().lock_path_of(key), wait,
                                            std::min(wait, kStoppedHolder));
  if (locked && locked->lock) {
    key_lock = std::move(locked->lock);
    Found found = find_local(key, what, check);
    if (found.entry) {
      key_lock.reset();
      count([](Stats& s) { ++s.waited_for_others; });
    }
    return found;
  }
  if (locked && wait.count() > 0) {
    count([](Stats& s) { ++s.waits_given_up; });
    warn_wait_given_up(locked->holder_stopped, wait, what, key.hex(),
                       local_->disk().root().string());
  }
  return {};
}

std::shared_ptr<const Entry> Cache::from_remote(const Key& key, const Check& check) {
  const auto start = Clock::now();
  // Layers pass over a value that fails the check (layered.hpp); every value is checked here.
  auto bytes = remote_->get_checked(key, [&](std::string_view value) -> Result<void> {
    auto entry = checked_entry(value, key, check);
    if (!entry) return std::move(entry).error();
    return {};
  });
  std::shared_ptr<const Entry> found;
  std::uint64_t size = 0;
  bool rejected = false;
  if (bytes && bytes->has_value()) {
    size = (*bytes)->size();
    auto entry = checked_entry(**bytes, key, check);
    if (entry) {
      found = std::make_shared<const Entry>(std::move(entry).value());
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
  // The verified bytes are written to disk in the background (a crash before they land loses a
  // cache fill, never correctness); they are not sent back to the remote.
  if (found && !config_.read_only) local_->put_later(key, std::move(**bytes));
  return found;
}

void Cache::store(const Key& key, const Entry& entry, bool share) {
  if (config_.read_only) return;
  const std::string bytes = encode_entry(key, entry);
  if (share && remote_) remote_->put_later(key, bytes);
  local_->put(key, bytes, LocalStore::Persist::now);
}

std::shared_ptr<const Entry> Cache::compile_entry(const CompileRequest& request,
                                                  const IncludePlan& plan, const KeyInputs& inputs,
                                                  std::int64_t since_ns, bool& headers_changed) {
  headers_changed = false;
  PchOutcome pch;
  const std::filesystem::path pch_folder = pch_->folder_for(request, inputs);
  auto compiled = compile_nvrtc(request, plan, pch_folder, pch);
  pch_->note(pch);
  const double compile_ms = compiled ? static_cast<double>(compiled->compile_us) / 1000.0 : 0.0;
  count([&](Stats& s) {
    s.pch_created += pch.created ? 1 : 0;
    s.pch_reused += pch.reused ? 1 : 0;
    ++(compiled ? s.compiles : s.compile_failures);
    s.compile_ms += compile_ms;
  });
  if (!compiled) throw Error(std::move(compiled).error());
  // NVRTC read the headers after the key was derived: an edit in between gives code that is not
  // the key's. It is returned (it is what NVRTC compiled) but neither stored nor kept as a PCH.
  if (!config_.disabled && inputs.unresolvable.empty()) {
    auto nvrtc = locate_nvrtc();
    headers_changed = !nvrtc || keys_->headers_changed_since(request, plan, request.arch, *nvrtc,
                                                             inputs, since_ns);
  }
  if (headers_changed) {
    pch_->discard(pch_folder);
    count([](Stats& s) { ++s.headers_changed; });
    warn_headers_changed(request.program_name);
  }
  return std::make_shared<const Entry>(std::move(compiled).value());
}

std::optional<CacheResult> Cache::load_blob(std::string_view ns, std::string_view name) {
  return find_blob(ns, name, std::nullopt);
}

std::optional<CacheResult> Cache::load_or_claim_blob(std::string_view ns, std::string_view name,
                                                     std::chrono::milliseconds wait) {
  return find_blob(ns, name, wait);
}

std::optional<CacheResult> Cache::find_blob(std::string_view ns, std::string_view name,
                                            std::optional<std::chrono::milliseconds> claim_wait) {
  const auto start = Clock::now();
  check_blob_name(ns, name).value_or_throw();
  CacheResult result;
  result.key = blob_key(ns, name);
  if (config_.disabled) return std::nullopt;
  const auto check = [&](const Entry& entry) -> Result<void> {
    if (is_blob_of(entry, ns, name)) return {};
    return fail(Errc::corrupt, "it is not the blob it is stored as");
  };
  Found found = find_local(result.key, "blob", check);
  if (!found.entry && remote_) {  // the fleet's: read through like a program's entry
    if (auto entry = from_remote(result.key, check)) {
      memory_->put(result.key, entry);
      found = {std::move(entry), Source::remote};
    }
  }
  if (!found.entry && claim_wait) {
    std::optional<FileLock> key_lock;
    found = claim(result.key, "blob", check, *claim_wait, key_lock);
    if (key_lock) claims_->hold(result.key, std::move(*key_lock));
  }
  if (!found.entry) {
    count([](Stats& s) { ++s.misses; });
    return std::nullopt;
  }
  count_hit(*found.entry, found.tier);
  result.entry = std::move(found.entry);
  result.tier = found.tier;
  result.hit = true;
  result.elapsed_ms = ms_since(start);
  return result;
}

bool Cache::holds_blob_claim(std::string_view ns, std::string_view name) {
  check_blob_name(ns, name).value_or_throw();
  return claims_->holds(blob_key(ns, name));
}

bool Cache::remove_blob(std::string_view ns, std::string_view name) {
  check_blob_name(ns, name).value_or_throw();
  const Key key = blob_key(ns, name);
  memory_->remove(key);
  if (config_.disabled) return false;
  const bool removed = local_->remove(key).value_or_throw();
  if (remote_) (void)remote_->remove(key);
  return removed;
}

std::uint64_t Cache::remove_namespace(std::string_view ns) {
  check_namespace(ns).value_or_throw();
  std::uint64_t removed = 0;
  if (!config_.disabled) {
    local_->check_removable().value_or_throw();
    removed = Store(config_.dir).clear_namespace(ns).value_or_throw().removed;
  }
  // After the disk: an entry read back from disk meanwhile is dropped too.
  memory_->remove_if([&](const Entry& entry) { return entry_namespace(entry) == ns; });
  return removed;
}

std::uint64_t Cache::clear_store() {
  if (config_.read_only) local_->check_removable().value_or_throw();
  const std::uint64_t removed = Store(config_.dir).clear().value_or_throw();
  memory_->remove_if([](const Entry&) { return true; });  // after the disk, as remove_namespace
  return removed;
}

void Cache::release_blob_claim(std::string_view ns, std::string_view name) {
  check_blob_name(ns, name).value_or_throw();
  claims_->release(blob_key(ns, name));
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
    store(result.key, *entry, true);  // shared with the fleet like a compiled entry
    memory_->put(result.key, entry);
  }
  claims_->release(result.key);  // waiters find it now
  result.entry = std::move(entry);
  result.tier = Source::compiled;
  result.hit = false;
  result.elapsed_ms = ms_since(start);
  return result;
}

CacheResult Cache::compile(const CompileRequest& request) {
  const auto start = Clock::now();
  check_last_option_has_its_value(request.options).value_or_throw();
  CompileRequest resolved = request;
  if (resolved.arch.empty()) resolved.arch = default_arch();
  const std::int64_t since_ns = realtime_ns();  // before the headers are read for the key
  const NvrtcLibrary nvrtc = locate_nvrtc().value_or_throw();
  // The request's include plan, made once: the key, the compile and the check after it follow it.
  const IncludePlan plan = plan_includes(resolved, nvrtc.include_dir);
  // The key without a copy of the headers (they are read back only for a miss or a new recipe).
  const PreparedKey prepared = keys_->prepare(resolved, plan, resolved.arch, nvrtc);
  const KeyInputs& inputs = prepared.inputs;
  CacheResult result;
  result.key = prepared.key();
  result.uncached = keyless_reason(config_, request, plan, inputs, result.uncached_detail);
  const bool use_store = result.uncached == Uncached::none;
  if (use_store) {
    counters_->update([](Stats& s) { ++s.programs; });  // count() of the outcome flushes
  } else {
    count_uncached(result.uncached, result.uncached_detail);
    warn_uncached(result.uncached, result.uncached_detail);
  }
  const auto done = [&](Found found) {
    if (found.tier != Source::compiled) count_hit(*found.entry, found.tier);
    if (recorder_ && use_store)
      recorder_->add(result.key, request, [&] { return prepared.full(); });
    result.entry = std::move(found.entry);
    result.tier = found.tier;
    result.hit = found.tier != Source::compiled;
    result.elapsed_ms = ms_since(start);
    return result;
  };

  if (use_store) {
    if (auto entry = memory_->get(result.key)) return done({std::move(entry), Source::memory});
  }
  // One compile per key at a time in this process: later callers wait and then hit memory.
  std::lock_guard flight(claims_->stripe(result.key));
  std::optional<FileLock> key_lock;  // held until the compiled entry is stored
  if (use_store) {
    if (Found found = find(result.key, inputs, key_lock); found.entry) return done(found);
  }
  bool headers_changed = false;
  auto entry = compile_entry(resolved, plan, prepared.full(), since_ns, headers_changed);
  if (use_store && !headers_changed) {
    store(result.key, *entry, true);
    memory_->put(result.key, entry);
  }
  if (use_store && config_.read_only) {  // looked up, but a miss is not stored
    result.uncached = Uncached::read_only;
    result.uncached_detail = "program " + program_of(request);
    note_uncached_detail(result.uncached, result.uncached_detail);
    count([](Stats& s) { ++s.uncached_read_only; });
  }
  return done({std::move(entry), Source::compiled});
}

}  // namespace cubby
