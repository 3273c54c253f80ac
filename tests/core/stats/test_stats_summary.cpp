// Tests of the end-of-run summary (core/src/stats/stats_summary.cpp): the one wording the harness,
// the pytest plugin (cubby_stats_summary) and `cubby stats` print; and stats_from_json, the way
// summed JSON counters come back as Stats.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cubby/cubby.h"
#include "cubby/error.hpp"
#include "cubby/stats_summary.hpp"
#include "stats/stats_report.hpp"

namespace cubby {
namespace {

using Lines = std::vector<std::string>;

TEST(SummaryLines, AQuietRunIsOneLineOfZeros) {
  EXPECT_EQ(summary_lines(Stats{}),
            Lines{"hits: 0 (memory 0, disk 0, remote 0), misses: 0, compiles: 0 (0.00 s), compile "
                  "time saved: 0.00 s"});
}

TEST(SummaryLines, CountsHitsByTierCompilesTimesDuplicatesAndProblems) {
  Stats stats;
  stats.hits_memory = 2;
  stats.hits_disk = 22;
  stats.misses = 1;
  stats.compiles = 1;
  stats.compile_ms = 1500;
  stats.compile_ms_saved = 31204;
  stats.waited_for_others = 3;
  stats.failed_writes = 2;
  stats.compile_failures = 1;
  EXPECT_EQ(summary_lines(stats),
            (Lines{"hits: 24 (memory 2, disk 22, remote 0), misses: 1, compiles: 1 (1.50 s), "
                   "compile time saved: 31.20 s",
                   "duplicate compiles avoided: 3 (lookups that waited for another process "
                   "compiling the same kernel and got its result)",
                   "problems: failed writes 2, compile failures 1"}));
}

// One line per reason a program was compiled without the store, after the first line, in table
// order, each "N of M programs ...: <label>[, first <detail>]".
TEST(SummaryLines, ProgramsCompiledWithoutTheStoreAreOneLinePerReasonWithTheFirstDetail) {
  Stats stats;
  stats.programs = 9;
  stats.compiles = 4;
  stats.uncached_unnamed_include = 3;
  stats.uncached_read_only = 1;
  UncachedDetails first;
  first[static_cast<std::size_t>(Uncached::unnamed_include)] = "/h/a.h: #include H (program k.cu)";
  const Lines lines = summary_lines(stats, first);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1],
            "3 of 9 programs compiled without the store: an include the header scan cannot name, "
            "first /h/a.h: #include H (program k.cu)");
  EXPECT_EQ(lines[2],
            "1 of 9 programs compiled without the store: a miss in a read-only store (compiled, "
            "not stored)");
  // Counters persisted before `programs` was counted: never "3 of 0".
  stats.programs = 0;
  EXPECT_EQ(uncached_lines(stats).front().substr(0, 7), "3 of 4 ");
}

TEST(SummaryLines, TheRemoteLineHasCountsOnlyAndItsReasons) {
  Stats stats;
  stats.hits_remote = 2;
  stats.remote_misses = 2;
  stats.remote_ms = 1.6;
  stats.remote_writes = 1;
  stats.remote_bytes_read = 3 * 1024 * 1024 / 2;
  stats.remote_timeouts = 1;
  stats.remote_writes_dropped = 4;
  const Lines lines = summary_lines(stats);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1],
            "remote: 2/4 hits, 0.40 ms per lookup, 1 writes, 1.5 MiB in, 0.0 MiB out (timeouts 1, "
            "writes dropped 4)");
  // Written to but never asked: the line is there, its latency 0.
  Stats writes_only;
  writes_only.remote_writes = 5;
  EXPECT_EQ(summary_lines(writes_only).back(),
            "remote: 0/0 hits, 0.00 ms per lookup, 5 writes, 0.0 MiB in, 0.0 MiB out");
  // A fresh runner's read-ahead: said only when something was fetched ahead.
  Stats read_ahead = stats;
  read_ahead.remote_read_ahead = 24;
  read_ahead.remote_read_ahead_taken = 23;
  EXPECT_EQ(summary_lines(read_ahead)[1],
            "remote: 2/4 hits, 0.40 ms per lookup, 1 writes, 1.5 MiB in, 0.0 MiB out, 24 read "
            "ahead (23 taken) (timeouts 1, writes dropped 4)");
}

TEST(StatsFromJson, ReadsEveryCounterOfTheTableAndIgnoresTheRest) {
  Stats stats;
  for (std::size_t i = 0; i < kStats.size(); ++i) {
    if (kStats[i].count != nullptr) stats.*kStats[i].count = i + 1;
    if (kStats[i].ms != nullptr) stats.*kStats[i].ms = static_cast<double>(i) + 0.5;
  }
  nlohmann::json document = stats_to_json(stats);
  document["pid"] = 42;             // a stats-file line's extra member
  document["cupy_hits"] = 7;        // the CuPy backend's counters in the plugin's totals
  document["processes"] = 3.0;      // and the plugin's own
  document["hits_disk"] = 22.0;     // Python's sums may be floats
  document["misses"] = -1;          // nonsense is 0
  document["compiles"] = "twelve";  // likewise
  const Stats back = stats_from_json(document);
  for (const StatInfo& stat : kStats) {
    SCOPED_TRACE(std::string(stat.name));
    if (stat.name == "hits_disk") {
      EXPECT_EQ(back.hits_disk, 22u);
    } else if (stat.name == "misses" || stat.name == "compiles") {
      EXPECT_EQ(back.*stat.count, 0u);
    } else if (stat.count != nullptr) {
      EXPECT_EQ(back.*stat.count, stats.*stat.count);
    } else {
      EXPECT_DOUBLE_EQ(back.*stat.ms, stats.*stat.ms);
    }
  }
  EXPECT_THROW((void)stats_from_json(nlohmann::json::array()), Error);
}

// The plugin's way in: JSON counters through the C API, the lines back joined by '\n'.
TEST(CApiStatsSummary, GivesTheLinesOfTheCountersItIsGiven) {
  const char* text = cubby_stats_summary(R"({"hits_disk": 2, "misses": 1, "corrupt": 1,
                                             "compile_ms_saved": 1234.5, "pid": 7})");
  ASSERT_NE(text, nullptr) << cubby_last_error();
  EXPECT_EQ(std::string(text),
            "hits: 2 (memory 0, disk 2, remote 0), misses: 1, compiles: 0 (0.00 s), compile time "
            "saved: 1.23 s\nproblems: corrupt 1");
  EXPECT_EQ(cubby_stats_summary("not json"), nullptr);
  EXPECT_NE(std::string(cubby_last_error()).find("not JSON"), std::string::npos);
  EXPECT_EQ(cubby_stats_summary("[1, 2]"), nullptr);
  EXPECT_NE(std::string(cubby_last_error()).find("not a JSON object"), std::string::npos);
  EXPECT_EQ(cubby_stats_summary(nullptr), nullptr);
}

}  // namespace
}  // namespace cubby
