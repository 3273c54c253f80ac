// Counters persisted in a store, shared by every process that uses it.
//
// Two files under <root>/stats/:
//  - counters: one "name value" line per counter (integers; times in microseconds), replaced
//    atomically (temp file + rename) under the lock <root>/locks/stats.lock;
//  - journal: lines of "name=value ..." deltas, each appended by one O_APPEND write without any
//    lock (three syscalls), so processes can persist their counters cheaply and often (at exit,
//    and every few seconds of hits). `update` folds the journal into `counters` once it is big.
// The persisted value of a counter is its value in `counters` plus its deltas in `journal`.
// Every counter is at least 0 and sums saturate at INT64_MAX: a negative or overflowing value in
// either file never shows as a negative counter. Only the size estimate (store_*) takes negative
// deltas; a negative journal delta of any other counter is skipped.
// Unparseable text is skipped (a line of the journal) or reset (the counters file): counters are
// statistics, never needed for correctness, and a few counts may be lost to a crash or to an
// append that races a fold. Unknown names are kept, so versions can share a store.
//
// Names: the persisted names of the process counters (cubby/stats.hpp, CUBBY_STATS: what every
// Cache adds at exit and every few seconds of hits) and the counters only the store keeps
// (CUBBY_STORE_COUNTERS below). persisted_names() lists them all.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/error.hpp"
#include "cubby/stats.hpp"

namespace cubby {

using Counters = std::map<std::string, std::int64_t, std::less<>>;

// X(name, label, what): the counters only a store keeps (no process counts them in Stats), in
// `cubby stats`'s order after the CUBBY_STATS rows; label "": not a row (the size estimate, shown
// as measured entries and bytes instead).
#define CUBBY_STORE_COUNTERS(X)                                                                   \
  X(evictions, "evictions", "entries removed to keep the store under its size bound (gc, trims)") \
  X(store_bytes, "",                                                                              \
    "size estimate: entry bytes (adjusted by every write and removal, made "                      \
    "exact by `cubby gc`); the trigger of eviction")                                              \
  X(store_entries, "", "size estimate: entries (as store_bytes)")

struct StoreCounterInfo {
  std::string_view name;
  std::string_view label;
  std::string_view what;
};

inline constexpr auto kStoreCounters = std::to_array<StoreCounterInfo>({
#define CUBBY_STORE_COUNTER_INFO(name, label, what) {#name, label, what},
    CUBBY_STORE_COUNTERS(CUBBY_STORE_COUNTER_INFO)
#undef CUBBY_STORE_COUNTER_INFO
});

// Every name this version persists: CUBBY_STATS's persisted names, then CUBBY_STORE_COUNTERS.
std::vector<std::string_view> persisted_names();

// The persisted counters for the growth of a process's Stats from `before` to `after`: every
// counter of kStats with a persisted name whose value changed (zeros left out); ms counters as
// the difference of their values rounded to integer microseconds.
Counters persisted_delta(const Stats& before, const Stats& after);

// True for the counters of the store's size estimate (store_bytes, store_entries): the only ones
// that go down (by negative deltas).
bool is_size_estimate(std::string_view name);

// counters[name] += delta, saturating: never above INT64_MAX, never below 0.
void add_counter(Counters& counters, std::string_view name, std::int64_t delta);

// The counters file's text for `counters`, and back. parse_counters: Errc::corrupt on a line that
// is not "name value" (name: [a-z0-9_]+, value: a signed 64-bit decimal).
std::string format_counters(const Counters& counters);
Result<Counters> parse_counters(std::string_view text);

class StoreStats {
 public:
  // The counters file's name in <root>/stats/ (its temp files: io::temp_path_for's names).
  static constexpr std::string_view kCountersName = "counters";

  explicit StoreStats(std::filesystem::path root);

  // The persisted counters (counters file + journal); empty if there are none yet. Errc::corrupt
  // if the counters file is garbage.
  Result<Counters> read() const;

  // Under the stats lock: reads the persisted counters (a garbage file counts as empty), applies
  // `change`, writes them back (folding a big journal in); returns the new counters.
  // Errc::io if the store cannot be written.
  Result<Counters> update(const std::function<void(Counters&)>& change);

  // update() that adds `delta` to the counters (missing names count as 0).
  Result<Counters> add(const Counters& delta);

  // Appends `delta` to the journal: one write, no lock. Errc::io if it cannot be written.
  Result<void> append(const Counters& delta);

  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path root_;
  std::filesystem::path file_;
  std::filesystem::path journal_;
};

}  // namespace cubby
