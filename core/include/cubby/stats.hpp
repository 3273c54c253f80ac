// The counters of a process (Stats), defined once. CUBBY_STATS below is the only list of them:
// the Stats members, difference and sums, the JSON of cubby_stats_json and CUBBY_STATS_FILE,
// the names persisted in a store (store_stats.hpp), the labels of `cubby stats`, the harness's
// test properties (cubby_<name>) and the pytest summary's fields are all generated from it (or,
// in Python, read from the JSON). Adding a counter is one X(...) line here plus the code that
// counts it. Counters only a store keeps (evictions, its size estimate) are listed once in
// store_stats.hpp (CUBBY_STORE_COUNTERS). tests/core/stats/test_stats.cpp checks every consumer
// against the table.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cubby/export.h"

namespace cubby {

// What a counter counts: events, bytes (both std::uint64_t), or milliseconds of time (double).
enum class Unit : unsigned char { count, bytes, ms };

// Why a program was compiled without the store: never looked up under a key, or compiled and not
// stored. X(name, label, what, ...), one line per reason:
//  name   the reason; its counter is the CUBBY_STATS line uncached_<name> (generated from this
//         line), its name in CacheResult::uncached, cubby_result_fields.uncached and the
//         "uncached_first" member of a process's JSON
//  label  how summaries say it: "N of M programs compiled without the store: <label>, first ..."
//  what   what it counts
// The arguments after X are passed on after `what` (CUBBY_STATS passes its own X that way).
#define CUBBY_UNCACHED(X, ...)                                                                   \
  X(unnamed_include, "an include the header scan cannot name",                                   \
    "programs with an #include or __has_include the header scan cannot name (through a macro):"  \
    " no key covers every header they may read" __VA_OPT__(, ) __VA_ARGS__)                      \
  X(unkeyable_option, "an option the key cannot cover",                                          \
    "programs with a front-end option (-Xcudafe) whose effect on the headers read is not "       \
    "modelled" __VA_OPT__(, ) __VA_ARGS__)                                                       \
  X(store_disabled, "the store is disabled (CUBBY_DISABLE)",                                     \
    "programs compiled by a Cache whose store is disabled" __VA_OPT__(, ) __VA_ARGS__)           \
  X(read_only, "a miss in a read-only store (compiled, not stored)",                             \
    "programs compiled after a miss in a read-only store (CUBBY_READ_ONLY): not stored, so "     \
    "compiled again next time" __VA_OPT__(, ) __VA_ARGS__)                                       \
  X(compiled_elsewhere, "compiled by the front end itself",                                      \
    "programs a front end compiled without asking the Cache (CuPy's own way: jitify, a payload " \
    "or architecture cubby does not produce, an option cubby rejects)" __VA_OPT__(, ) __VA_ARGS__)

// A CUBBY_STATS line from a CUBBY_UNCACHED line.
#define CUBBY_UNCACHED_STAT(reason, label, what, X) \
  X(uncached_##reason, count, "uncached_" #reason, "uncached: " #reason, what)

// X(name, unit, persisted, label, what), one line per counter, in display order:
//  name       the Stats member; its JSON key; the harness property cubby_<name>
//  unit       count | bytes | ms
//  persisted  its name in the store's counters ("" : never persisted); ms counters persist as
//             integer microseconds, so under a *_us name
//  label      its row in `cubby stats` ("": not a row of its own: times are shown as totals and
//             per lookup, from the persisted microseconds)
//  what       what it counts
// Persisted names are a file format (stats/counters of existing stores): never rename one.
// The remote tier (CUBBY_REMOTE): a remote lookup is a hit (hits_remote) or a miss
// (remote_misses); the other remote_* counters say why misses and writes failed.
#define CUBBY_STATS(X)                                                                             \
  X(programs, count, "programs", "programs",                                                       \
    "programs asked for: served by the store, compiled into it, or compiled without it")           \
  X(hits_memory, count, "hits_memory", "hits (memory)", "lookups answered by the memory tier")     \
  X(hits_disk, count, "hits_disk", "hits (disk)", "lookups answered by the store on disk")         \
  X(hits_remote, count, "hits_remote", "hits (remote)", "lookups answered by the remote tier")     \
  X(misses, count, "misses", "misses", "lookups that found no usable entry")                       \
  X(compiles, count, "compiles", "compiles", "NVRTC compiles done (successful ones)")              \
  X(compile_failures, count, "compile_failures", "compile failures", "NVRTC compiles that failed") \
  X(pch_created, count, "pch_created", "PCH created",                                              \
    "precompiled headers NVRTC created for the compiles after it (CUBBY_PCH)")                     \
  X(pch_reused, count, "pch_reused", "PCH reused", "compiles that reused a precompiled header")    \
  X(headers_changed, count, "headers_changed", "edited mid-compile",                               \
    "compiles not stored: a header changed while NVRTC compiled (the result is still returned)")   \
  CUBBY_UNCACHED(CUBBY_UNCACHED_STAT, X)                                                           \
  X(waited_for_others, count, "waited_for_others", "served after a wait",                          \
    "lookups served by another process's compile they waited for (a compile not done twice)")      \
  X(waits_given_up, count, "waits_given_up", "waits given up",                                     \
    "waits for another process's compile given up (its holder stopped, or hung past the deadline)" \
    ": produced here too")                                                                         \
  X(corrupt, count, "corrupt", "corrupt entries",                                                  \
    "entries found bad (decode, or names missing) and removed")                                    \
  X(failed_writes, count, "failed_writes", "failed writes",                                        \
    "stores that could not be written (full, read-only, ...)")                                     \
  X(bytes_read, bytes, "bytes_read", "bytes read", "entry bytes read from disk/remote")            \
  X(bytes_written, bytes, "bytes_written", "bytes written", "entry bytes written")                 \
  X(compile_ms, ms, "compile_us", "", "time spent compiling in this process")                      \
  X(compile_ms_saved, ms, "compile_us_saved", "",                                                  \
    "sum of the original compile times of every hit")                                              \
  X(remote_misses, count, "remote_misses", "remote misses",                                        \
    "remote lookups without a usable entry, for any reason below too")                             \
  X(remote_errors, count, "remote_errors", "remote errors",                                        \
    "remote calls that failed: refused, reset, auth, error reply")                                 \
  X(remote_timeouts, count, "remote_timeouts", "remote timeouts",                                  \
    "remote calls past CUBBY_REMOTE_TIMEOUT_MS")                                                   \
  X(remote_skipped, count, "remote_skipped", "remote skipped",                                     \
    "remote calls not made: the remote failed within CUBBY_REMOTE_BACKOFF_MS")                     \
  X(remote_rejected, count, "remote_rejected", "remote rejected",                                  \
    "remote values refused: unsigned, badly signed, too large, corrupt or wrong entries")          \
  X(remote_bytes_read, bytes, "remote_bytes_read", "remote bytes in", "value bytes received")      \
  X(remote_bytes_written, bytes, "remote_bytes_written", "remote bytes out",                       \
    "value bytes sent by successful remote writes")                                                \
  X(remote_writes, count, "remote_writes", "remote writes", "entries written to the remote")       \
  X(remote_writes_dropped, count, "remote_writes_dropped", "remote writes lost",                   \
    "remote writes given up (queue full, failed, too large, at exit)")                             \
  X(remote_read_ahead, count, "remote_read_ahead", "remote read ahead",                            \
    "entries a fresh runner fetched ahead of its lookups (CUBBY_REMOTE_READ_AHEAD)")               \
  X(remote_read_ahead_taken, count, "remote_read_ahead_taken", "remote read ahead taken",          \
    "of those, the ones a lookup took (the rest were fetched for nothing)")                        \
  X(remote_ms, ms, "remote_us", "",                                                                \
    "time spent in remote lookups (per lookup: remote_ms / (hits_remote + remote_misses))")

// The C++ type of a counter of each unit.
#define CUBBY_STAT_TYPE_count std::uint64_t
#define CUBBY_STAT_TYPE_bytes std::uint64_t
#define CUBBY_STAT_TYPE_ms double

// A process's counters (Cache::stats); one member per CUBBY_STATS line, all 0 at first.
struct Stats {
#define CUBBY_STAT_MEMBER(name, unit, persisted, label, what) CUBBY_STAT_TYPE_##unit name = 0;
  CUBBY_STATS(CUBBY_STAT_MEMBER)
#undef CUBBY_STAT_MEMBER
};

// Each counter by name: Stat::hits_disk indexes kStats (and AtomicStats).
enum class Stat : std::size_t {
#define CUBBY_STAT_ENUM(name, unit, persisted, label, what) name,
  CUBBY_STATS(CUBBY_STAT_ENUM)
#undef CUBBY_STAT_ENUM
};

// One CUBBY_STATS line. Exactly one of `count` (unit count or bytes) and `ms` (unit ms) is set.
struct StatInfo {
  std::string_view name;
  Unit unit;
  std::string_view persisted;
  std::string_view label;
  std::string_view what;
  std::uint64_t Stats::*count;
  double Stats::*ms;
};

#define CUBBY_STAT_COUNT_count(name) &Stats::name
#define CUBBY_STAT_COUNT_bytes(name) &Stats::name
#define CUBBY_STAT_COUNT_ms(name) nullptr
#define CUBBY_STAT_MS_count(name) nullptr
#define CUBBY_STAT_MS_bytes(name) nullptr
#define CUBBY_STAT_MS_ms(name) &Stats::name

// Every counter, in CUBBY_STATS order (kStats[i] is Stat(i)).
inline constexpr auto kStats = std::to_array<StatInfo>({
#define CUBBY_STAT_INFO(name, unit, persisted, label, what) \
  {#name,                                                   \
   Unit::unit,                                              \
   persisted,                                               \
   label,                                                   \
   what,                                                    \
   CUBBY_STAT_COUNT_##unit(name),                           \
   CUBBY_STAT_MS_##unit(name)},
    CUBBY_STATS(CUBBY_STAT_INFO)
#undef CUBBY_STAT_INFO
});

constexpr const StatInfo& stat_info(Stat stat) { return kStats[static_cast<std::size_t>(stat)]; }

// Each reason a program is compiled without the store (CUBBY_UNCACHED); none: it was not.
enum class Uncached : unsigned char {
#define CUBBY_UNCACHED_ENUM(name, label, what) name,
  CUBBY_UNCACHED(CUBBY_UNCACHED_ENUM)
#undef CUBBY_UNCACHED_ENUM
      none
};

// One CUBBY_UNCACHED line and its counter.
struct UncachedInfo {
  std::string_view name;
  std::string_view label;
  std::string_view what;
  std::uint64_t Stats::*count;  // uncached_<name>
};

// Every reason, in CUBBY_UNCACHED order (kUncached[i] is Uncached(i)).
inline constexpr auto kUncached = std::to_array<UncachedInfo>({
#define CUBBY_UNCACHED_INFO(name, label, what) {#name, label, what, &Stats::uncached_##name},
    CUBBY_UNCACHED(CUBBY_UNCACHED_INFO)
#undef CUBBY_UNCACHED_INFO
});

// The reason's line; `reason` is not Uncached::none.
constexpr const UncachedInfo& uncached_info(Uncached reason) {
  return kUncached[static_cast<std::size_t>(reason)];
}

// "" for Uncached::none, else the reason's name.
constexpr std::string_view uncached_name(Uncached reason) {
  return reason == Uncached::none ? std::string_view() : uncached_info(reason).name;
}

// The reason named `name`; Uncached::none when no reason has that name.
CUBBY_API Uncached uncached_by_name(std::string_view name);

// What the first program of each reason was, per reason (kUncached order; "" where none was).
using UncachedDetails = std::array<std::string, kUncached.size()>;

// Keeps `detail` (e.g. "<header>: #include NAME (program k.cu)") as this process's first of
// `reason` unless it has one already. Thread-safe.
CUBBY_API void note_uncached_detail(Uncached reason, const std::string& detail);

// This process's first detail of each reason (note_uncached_detail). Thread-safe.
CUBBY_API UncachedDetails uncached_details();

// `after - before`, counter by counter.
CUBBY_API Stats difference(const Stats& after, const Stats& before);

// `total += part`, counter by counter.
CUBBY_API Stats& operator+=(Stats& total, const Stats& part);

// True when some counter is not 0.
CUBBY_API bool any_counted(const Stats& stats);

}  // namespace cubby
