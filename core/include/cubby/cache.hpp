// The orchestrator: memory -> disk -> remote -> compile, with stats. Thread-safe; one compile per
// key at a time within the process. Public boundary: throws cubby::Error.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/config.hpp"
#include "cubby/entry.hpp"
#include "cubby/export.h"
#include "cubby/key.hpp"
#include "cubby/nvrtc.hpp"
#include "cubby/stats.hpp"

namespace cubby {

class CacheCounters;
class DefaultArch;
class FileLock;
struct IncludePlan;
class KeyClaims;
class KeyDeriver;
class LocalStore;
class MemoryTier;
class PchPolicy;
class Remote;
class ReadAheadRemote;
class SuiteRecorder;

enum class Source { memory, disk, remote, compiled };

// "memory", "disk", "remote", "compiled".
CUBBY_API const char* source_name(Source source) noexcept;

struct CUBBY_API CacheResult {
  Key key;
  bool hit = false;                    // false: compiled by this call
  Source tier = Source::compiled;      // where the entry came from
  std::shared_ptr<const Entry> entry;  // never null
  double elapsed_ms = 0;               // this call, key derivation included
  // Why the program was compiled without the store (never looked up, or not stored: a miss in a
  // read-only store), Uncached::none when it was not, and what the summaries show of it: the
  // first directive the scan cannot name, the option the key cannot cover, or the program.
  Uncached uncached = Uncached::none;
  std::string uncached_detail;

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

  // Blob `name` of namespace `ns` (see blob.hpp): from memory, else disk, else the remote (checked
  // like a program's entry, then written to disk in the background); nullopt on a miss (counted as
  // a miss). A stored entry that does not decode or is not that blob is counted corrupt, removed
  // and reported as a miss; a remote one is a counted remote miss, never served. Throws
  // cubby::Error(invalid_argument) for a bad name.
  std::optional<CacheResult> load_blob(std::string_view ns, std::string_view name);
  // Stores `payload` byte for byte as blob `name` of `ns` (memory and disk, and queued for the
  // remote unless in read mode; `compile_ms`: what producing it cost, credited as saved on later
  // hits). A store that cannot be written warns once and counts failed_writes, as for compiles.
  // Throws cubby::Error(invalid_argument).
  CacheResult store_blob(std::string_view ns, std::string_view name, std::string_view payload,
                         double compile_ms);
  // load_blob, and on a miss a claim: the caller is to produce the blob and store_blob it (which
  // gives the claim back), so that other processes asking for it meanwhile wait for that instead
  // of producing it again (the per-key lock compiles take). A miss while another process holds
  // the claim waits up to `wait` for it, then looks again: a hit when the other one stored it
  // (counted in waited_for_others). A wait that expires, a read-only store, or one whose locks
  // cannot be made: a miss without a claim (the caller produces the blob anyway). A claim lasts
  // until store_blob, release_blob_claim, the Cache's end or the process's.
  std::optional<CacheResult> load_or_claim_blob(std::string_view ns, std::string_view name,
                                                std::chrono::milliseconds wait);
  // Removes blob `name` of `ns`: from this Cache's memory tier, the store's disk and, when one is
  // configured, the remote (asked at once; a failure there is ignored: the remote keeps a copy
  // that a later miss may read back). Whether the disk held it. Other processes' memory tiers
  // keep what they loaded. Throws cubby::Error: invalid_argument (a bad name, a read-only
  // store), io (the entry cannot be removed).
  bool remove_blob(std::string_view ns, std::string_view name);
  // Removes every entry of namespace `ns` (entry_namespace, format/blob.hpp: "programs" for
  // compiled programs, else a blob namespace such as "cuda-core"): from the store's disk
  // (Store::clear_namespace: a scan that reads and decodes every entry; ones that do not decode
  // are kept), then from this Cache's memory tier, so that this Cache serves none of them
  // afterwards unless they are stored again. The remote tier is not touched (it cannot be
  // listed): a later miss may read a removed entry back from it. Other processes' memory tiers
  // keep what they loaded. The count removed from disk (0 for a disabled Cache, which touches no
  // disk). Throws cubby::Error: invalid_argument (a bad namespace, a read-only store), io.
  std::uint64_t remove_namespace(std::string_view ns);
  // Removes every entry of the store (Store::clear), then empties this Cache's memory tier, so
  // that this Cache serves none of them afterwards unless they are stored again (the remote tier
  // and other processes' memory tiers as for remove_namespace). Also on a disabled Cache's store,
  // as `cubby clear`. The count removed. Throws cubby::Error: invalid_argument for a read-only
  // store (nothing removed), io.
  std::uint64_t clear_store();
  // Gives back the claim on blob `name` of `ns` without storing it (it could not be produced).
  // No effect without a claim.
  void release_blob_claim(std::string_view ns, std::string_view name);
  // Whether this Cache holds the claim on blob `name` of `ns`.
  bool holds_blob_claim(std::string_view ns, std::string_view name);

  // What read_ahead_suite did: the entries it read into memory, and how many of the suite's
  // recipes the store may lack an entry for now (none: a run of the recorded programs misses
  // nothing, so a prefetch has nothing to do). A recipe not looked at (a bound, `stop`, a key
  // that cannot be derived) counts as lacking; an unreadable manifest makes it kUnknown.
  struct ReadAhead {
    static constexpr std::size_t kUnknown = static_cast<std::size_t>(-1);
    std::size_t read = 0;
    std::size_t lacking = 0;
  };

  // Reads ahead, into this Cache's memory tier, the entries the recipes of Config::suite's
  // manifest (a suite's earlier runs, format/recipe.hpp) have now: each recipe's key derived as
  // compile() derives it (so the header scans are memoized for the run's own keys too), its entry
  // read from disk and checked as a disk hit is. For a background thread while the run gets ready
  // (the pytest plugin's CuPy warm-up while pytest collects): the run's lookups then hit memory.
  // Asks no remote, compiles nothing and counts no miss: a recipe whose entry is missing (a
  // header edited since) is left to compile(); a bad entry is handled as compile() handles it.
  // At most Config::memory_entries entries and 256 MiB of payloads, in the manifest's order (the
  // order the suite first asked for them). `stop` is asked before each recipe. Nothing read and
  // nothing lacking without a suite or its manifest, and for a disabled Cache. Stops at the first
  // error of key derivation (no NVRTC: compile() reports it). Thread-safe, as every member.
  ReadAhead read_ahead_suite(const std::function<bool()>& stop = {});

  // The key inputs / key of `request` (arch resolved as `compile` would). No NVRTC work.
  KeyInputs key_inputs(const CompileRequest& request) const;
  Key key_of(const CompileRequest& request) const;
  // key_of, for a request `compile` would look up and store under it; Errc::invalid_argument
  // saying why for one it compiles without the store (an include the scan cannot name, an option
  // the key cannot cover, a disabled store): a front end storing what it compiled itself under
  // this key stays as header-exact as compile().
  Result<Key> storable_key(const CompileRequest& request) const;

  // The architecture `compile` uses when a request leaves it empty.
  std::string default_arch() const;

  Stats stats() const;
  // Counts a program a front end compiled without asking compile() (e.g. CuPy's own way:
  // Uncached::compiled_elsewhere), in `programs` and uncached_<reason>, with `detail` kept as the
  // process's first of `reason` when it is (note_uncached_detail). No effect for Uncached::none.
  void count_uncached(Uncached reason, const std::string& detail);
  // Finishes the work in flight: records the requests of Config::suite into its manifest (and
  // queues the manifest for the remote when that changed it), waits for the disk back-fills of
  // remote hits, gives queued
  // remote writes a bounded chance (max(1 s, 4 x CUBBY_REMOTE_TIMEOUT_MS); what is left is
  // dropped and counted), persists the counters to the store and reports them to
  // CUBBY_STATS_FILE. The destructor does the same; call it where a Cache lives until the
  // process exits (the GoogleTest harness does, after the last test). The Cache stays usable.
  void finish();
  const Config& config() const { return config_; }

 private:
  struct Found {  // an entry (null: none) and the tier it came from
    std::shared_ptr<const Entry> entry;
    Source tier = Source::compiled;
  };

  using Check = std::function<Result<void>(const Entry&)>;

  // The lookups of compile, in order: memory, disk, remote, then claim(). Counts a miss when all
  // miss.
  Found find(const Key& key, const KeyInputs& inputs, std::optional<FileLock>& key_lock);
  // The cross-process lock of `key` (one producer per key), waiting up to `wait` for another
  // holder, then the disk again: the entry another process stored meanwhile (counted in
  // waited_for_others), else nothing, with the lock in `key_lock` for the caller to hold while it
  // produces the entry. Neither (an expired wait, said on stderr; a read-only store; locks that
  // cannot be made): the caller produces it unlocked. `what` names it in messages.
  Found claim(const Key& key, const char* what, const Check& check, std::chrono::milliseconds wait,
              std::optional<FileLock>& key_lock);
  // load_blob and load_or_claim_blob: the lookups, and claim() on a miss when `claim_wait`.
  std::optional<CacheResult> find_blob(std::string_view ns, std::string_view name,
                                       std::optional<std::chrono::milliseconds> claim_wait);
  // The entry for `key` in memory, else on disk (`check`ed there, then kept in memory): the one
  // lookup path of programs and blobs. `what` names it in messages ("entry", "blob").
  Found find_local(const Key& key, const char* what, const Check& check);
  // The remote tier's entry for `key` that decodes under it and passes `check` (a failure or a
  // bad entry is a counted miss): the one remote lookup of programs and blobs. Its bytes are
  // written to disk in the background.
  std::shared_ptr<const Entry> from_remote(const Key& key, const Check& check);
  // Compiles `request` (arch resolved) under `plan`, the include plan its key inputs were derived
  // under, counting the compile or its failure; throws cubby::Error. `inputs`: the request's key
  // inputs (their headers choose the PCH folder), derived after `since_ns` (realtime_ns).
  // `headers_changed`: a header changed while NVRTC compiled (headers_changed_since): the entry
  // must not be stored; its PCH was discarded, it was counted.
  std::shared_ptr<const Entry> compile_entry(const CompileRequest& request, const IncludePlan& plan,
                                             const KeyInputs& inputs, std::int64_t since_ns,
                                             bool& headers_changed);
  // Writes `entry` to disk (unless read-only) and, when `share`, queues it for the remote.
  void store(const Key& key, const Entry& entry, bool share);
  // Counts a hit of `tier` (and the compile time it saved).
  void count_hit(const Entry& entry, Source tier);
  void count(const std::function<void(Stats&)>& update);

  Config config_;
  std::unique_ptr<MemoryTier> memory_;
  std::unique_ptr<LocalStore> local_;        // the disk tier, its accounting and remote back-fills
  std::unique_ptr<Remote> remote_;           // null without CUBBY_REMOTE
  ReadAheadRemote* read_ahead_ = nullptr;    // remote_, when a fresh store reads ahead
  std::unique_ptr<CacheCounters> counters_;  // what the Cache counts (the tiers: see stats())
  std::unique_ptr<KeyClaims> claims_;  // single flight per key: in the process and across them
  std::unique_ptr<DefaultArch> arch_;
  std::unique_ptr<PchPolicy> pch_;
  std::unique_ptr<SuiteRecorder> recorder_;  // null without Config::suite
  std::unique_ptr<KeyDeriver> keys_;         // key derivation and the store's scan files
  std::atomic<bool> warned_remote_entry_{false};
};

}  // namespace cubby
