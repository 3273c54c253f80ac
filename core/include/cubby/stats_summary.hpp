// The end-of-run summary of a set of counters (cubby/stats.hpp), in its one wording: the GoogleTest
// harness's summary line, the pytest plugin's `cubby` section (through cubby_stats_summary) and
// `cubby stats` all print these lines.
#pragma once

#include <string>
#include <vector>

#include "cubby/export.h"
#include "cubby/stats.hpp"

namespace cubby {

// The summary of `stats`, one line per part, each "label: values" (times in seconds with 2
// decimals, remote bytes in MiB with 1):
// - always: "hits: 24 (memory 2, disk 22, remote 0), misses: 1, compiles: 1 (1.50 s),
//   compile time saved: 31.20 s" (one line);
// - then uncached_lines(stats, first);
// - when some lookup waited for another process's compile: "duplicate compiles avoided: 3
//   (lookups that waited for another process compiling the same kernel and got its result)";
// - when something went wrong: "problems: corrupt 1, failed writes 2, compile failures 1" (the
//   counts that are not 0);
// - when the remote was asked or written to: "remote: 2/3 hits, 0.40 ms per lookup, 1 writes,
//   0.1 MiB in, 0.0 MiB out (errors 1, timeouts 1, skipped 1, rejected 1, writes dropped 1)"
//   (the reasons that are not 0). Counts only: a remote's URL may hold credentials.
CUBBY_API std::vector<std::string> summary_lines(const Stats& stats,
                                                 const UncachedDetails& first = {});

// One line per reason a program was compiled without the store (CUBBY_UNCACHED) counted in
// `stats`, in table order: "3 of 40 programs compiled without the store: <label>, first <detail>"
// (M: stats.programs; ", first <detail>" when `first` holds one for the reason: the process's
// first such program, uncached_details()). None when no program was.
CUBBY_API std::vector<std::string> uncached_lines(const Stats& stats,
                                                  const UncachedDetails& first = {});

}  // namespace cubby
