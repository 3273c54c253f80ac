// A prefetch that starts at a run's first miss (PrefetchStart::at_first_miss): it loads the
// suite's recipes at once, then waits here until a process of the run misses (a Cache touches
// suite_miss_path at every miss of a key, when its Config::suite is set), and only then derives the
// recipes' keys and compiles what is missing. A warm run, which misses nothing, so pays for no key
// checks beside it (measured on the H200 with CuPy's own test files: 0.37 s of CPU and ~0.2 s of
// wall time a run). It does not wait where the run is sure to miss: the store lacks an entry of
// the suite's last run (recorded_entries_missing), or a header the recipes read was written since
// that run (headers_written_since_last_run).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string_view>
#include <vector>

#include "format/recipe.hpp"

namespace cubby {

// Whether the store at `root` lacks an entry that `suite`'s last run had (its keys file, a key per
// recipe), or has no such record (a fresh runner, a suite recorded elsewhere): a gc, a cleared or
// a new store, the benchmark's deleted entries. A prefetch at first miss then starts at once, as
// the run's first miss would start it, but before it. A stat a recipe, no key derived.
bool recorded_entries_missing(const std::filesystem::path& root, std::string_view suite);

// Whether a header that `recipes` (the suite's) read when they were recorded (header_paths_of,
// under `base_dir`) was written (its modification time) after the suite's keys file: a header
// edit since the last run that changed a key, whose first test will miss. So after an edit the
// prefetch starts with the run, not at its first test's miss. One stat per distinct header path
// (each list looked at once), no key derived. An edit this cannot see (a header copied with its
// old time, a new header that shadows one, a header gone: cubby warm skips its recipes) is left
// to the run's first miss. False without a keys file.
bool headers_written_since_last_run(const std::filesystem::path& root, std::string_view suite,
                                    const std::vector<Recipe>& recipes,
                                    const std::filesystem::path& base_dir);

// After a prefetch that started on headers_written_since_last_run found every recipe's entry (the
// headers were written, not changed: a touch, a checkout back and forth, a reinstall): sets the
// suite's keys file's time to `checked_ns` (realtime_ns, key/scan_record.hpp, taken before the
// keys were derived) where it is older, so the next run's prefetch waits for a miss again. Best
// effort.
void note_headers_unchanged(const std::filesystem::path& root, std::string_view suite,
                            std::int64_t checked_ns);

// Waits until `suite`'s miss file in the store at `root` was touched at or after `since_ns`
// (realtime_ns; a touch up to kMissClockSlack earlier counts too: file times come from a coarser
// clock), watching the manifests folder (inotify) and looking again every 250 ms; true then.
// False as soon as `stop()` is true (looked at after every wake-up; a signal wakes it).
bool wait_for_first_miss(const std::filesystem::path& root, std::string_view suite,
                         std::int64_t since_ns, const std::function<bool()>& stop);

inline constexpr std::int64_t kMissClockSlack = 50'000'000;  // 50 ms

}  // namespace cubby
