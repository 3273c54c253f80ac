// Tests of the counter table (cubby/stats.hpp, core/src/stats/stats.cpp) and of every consumer in
// the library generated from it: Stats arithmetic, the JSON of a process (stats_to_json, and so
// cubby_stats_json and CUBBY_STATS_FILE), the names persisted in a store (store_stats.hpp), and
// the remote tier's counters. A counter added to the table but missed by a consumer fails here;
// the CLI (tests/cli/test_cli_store.cpp), the harness (tests/harness/test_listener.cpp) and the
// pytest plugin (tests/python/test_plugin.py) check theirs against the same table.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cubby/cubby.h"
#include "cubby/stats.hpp"
#include "stats/atomic_stats.hpp"
#include "stats/stats_report.hpp"
#include "storage/local/store_stats.hpp"
#include "test_support.hpp"

namespace {

using cubby::kStats;
using cubby::kStoreCounters;
using cubby::Stat;
using cubby::StatInfo;
using cubby::Stats;
using cubby::Unit;

// A Stats whose i-th counter (kStats order) is (i + 1) * scale: every counter set, all different.
Stats numbered(std::uint64_t scale) {
  Stats stats;
  for (std::size_t i = 0; i < kStats.size(); ++i) {
    const StatInfo& stat = kStats[i];
    if (stat.count != nullptr) stats.*stat.count = (i + 1) * scale;
    if (stat.ms != nullptr) stats.*stat.ms = static_cast<double>((i + 1) * scale) + 0.25;
  }
  return stats;
}

bool is_counter_name(std::string_view name) {
  if (name.empty()) return false;
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// The table itself: names unique and well formed, each line's member of its unit, Stat(i) is
// line i, and Stats has no member outside the table.
TEST(StatsTable, EveryLineIsWellFormed) {
  std::set<std::string_view> names;
  std::set<std::string_view> persisted;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < kStats.size(); ++i) {
    const StatInfo& stat = kStats[i];
    SCOPED_TRACE(std::string(stat.name));
    EXPECT_TRUE(is_counter_name(stat.name));
    EXPECT_TRUE(names.insert(stat.name).second) << "duplicate name";
    EXPECT_FALSE(stat.what.empty());
    EXPECT_EQ((stat.count != nullptr) + (stat.ms != nullptr), 1);
    EXPECT_EQ(stat.ms != nullptr, stat.unit == Unit::ms);
    bytes += stat.unit == Unit::ms ? sizeof(double) : sizeof(std::uint64_t);
    if (!stat.persisted.empty()) {
      EXPECT_TRUE(is_counter_name(stat.persisted));
      EXPECT_TRUE(persisted.insert(stat.persisted).second) << "duplicate persisted name";
      // Times persist as integer microseconds, and say so in their name.
      EXPECT_EQ(stat.unit == Unit::ms, stat.persisted.find("_us") != std::string_view::npos);
      EXPECT_FALSE(cubby::is_size_estimate(stat.persisted));
    }
    EXPECT_EQ(&cubby::stat_info(static_cast<Stat>(i)), &stat);
  }
  EXPECT_EQ(sizeof(Stats), bytes) << "Stats has a member that is not a line of CUBBY_STATS";
  EXPECT_EQ(cubby::stat_info(Stat::remote_errors).name, "remote_errors");
  EXPECT_EQ(cubby::stat_info(Stat::compile_ms).persisted, "compile_us");
}

// The store's own counters: names of their own, and the size estimate is exactly the store_* ones.
TEST(StatsTable, StoreCountersAreWellFormed) {
  std::set<std::string_view> names;
  for (const StatInfo& stat : kStats) names.insert(stat.persisted);
  for (const auto& counter : kStoreCounters) {
    SCOPED_TRACE(std::string(counter.name));
    EXPECT_TRUE(is_counter_name(counter.name));
    EXPECT_TRUE(names.insert(counter.name).second) << "a name used twice";
    EXPECT_FALSE(counter.what.empty());
    EXPECT_EQ(cubby::is_size_estimate(counter.name), counter.name.starts_with("store_"));
  }
  EXPECT_TRUE(cubby::is_size_estimate("store_bytes"));
  EXPECT_TRUE(cubby::is_size_estimate("store_entries"));
  EXPECT_FALSE(cubby::is_size_estimate("evictions"));
}

TEST(StatsTable, DifferenceAndSumCoverEveryCounter) {
  const Stats one = numbered(1);
  const Stats three = numbered(3);
  Stats sum = one;
  sum += numbered(2);
  const Stats back = cubby::difference(sum, one);
  const Stats none = cubby::difference(three, sum);
  for (std::size_t i = 0; i < kStats.size(); ++i) {
    const StatInfo& stat = kStats[i];
    SCOPED_TRACE(std::string(stat.name));
    if (stat.count != nullptr) {
      EXPECT_EQ(sum.*stat.count, three.*stat.count);
      EXPECT_EQ(back.*stat.count, (i + 1) * 2);
      EXPECT_EQ(none.*stat.count, 0u);
    } else {
      EXPECT_DOUBLE_EQ(sum.*stat.ms, three.*stat.ms + 0.25);  // 0.25 + 0.25 in the sum
      EXPECT_DOUBLE_EQ(back.*stat.ms, static_cast<double>((i + 1) * 2) + 0.25);
    }
  }
  EXPECT_FALSE(cubby::any_counted(Stats{}));
  for (const StatInfo& stat : kStats) {
    Stats only;
    if (stat.count != nullptr) only.*stat.count = 1;
    if (stat.ms != nullptr) only.*stat.ms = 0.5;
    EXPECT_TRUE(cubby::any_counted(only)) << stat.name;
  }
}

// The JSON of a process (cubby_stats_json, CUBBY_STATS_FILE): exactly the table's names, values
// as counted.
TEST(StatsTable, JsonHasEveryCounterAndNothingElse) {
  const Stats stats = numbered(7);
  const nlohmann::json json = cubby::stats_to_json(stats);
  EXPECT_EQ(json.size(), kStats.size());
  for (const StatInfo& stat : kStats) {
    SCOPED_TRACE(std::string(stat.name));
    ASSERT_TRUE(json.contains(std::string(stat.name)));
    if (stat.count != nullptr) {
      EXPECT_EQ(json.at(std::string(stat.name)).get<std::uint64_t>(), stats.*stat.count);
    } else {
      EXPECT_DOUBLE_EQ(json.at(std::string(stat.name)).get<double>(), stats.*stat.ms);
    }
  }
}

// Times are rounded to whole microseconds, so sums of times print short.
TEST(StatsTable, JsonTimesAreRoundedToMicroseconds) {
  Stats stats;
  stats.compile_ms = 0.1 + 0.2;  // 0.30000000000000004
  stats.compile_ms_saved = 975.4339999;
  const std::string text = cubby::stats_to_json(stats).dump();
  EXPECT_NE(text.find("\"compile_ms\":0.3,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"compile_ms_saved\":975.434"), std::string::npos) << text;
  EXPECT_EQ(text.find("0000000"), std::string::npos) << text;
}

// Through the C API too: a fresh handle's cubby_stats_json has every counter (all 0).
TEST(StatsTable, CApiJsonHasEveryCounter) {
  cubby::testing::TempDir dir("stats-table");
  cubby_cache* cache = nullptr;
  ASSERT_EQ(cubby_open(dir.path().c_str(), &cache), CUBBY_OK) << cubby_last_error();
  const char* text = cubby_stats_json(cache);
  ASSERT_NE(text, nullptr) << cubby_last_error();
  const nlohmann::json json = nlohmann::json::parse(text);
  cubby_close(cache);
  EXPECT_EQ(json.size(), kStats.size() + 1);  // and the first program of each reason counted
  EXPECT_EQ(json.at(cubby::kUncachedFirstMember), nlohmann::json::object());
  for (const StatInfo& stat : kStats) {
    EXPECT_EQ(json.value(std::string(stat.name), -1.0), 0.0) << stat.name;
  }
}

// The reasons a program is compiled without the store (CUBBY_UNCACHED): each has its counter
// line uncached_<name> (persisted under that name, shown in `cubby stats`), its enum value, its
// name through uncached_by_name, and the same line in the C API's table.
TEST(StatsTable, EveryUncachedReasonHasItsCounterLine) {
  ASSERT_EQ(cubby_uncached_count(), cubby::kUncached.size());
  for (std::size_t i = 0; i < cubby::kUncached.size(); ++i) {
    const cubby::UncachedInfo& reason = cubby::kUncached[i];
    SCOPED_TRACE(std::string(reason.name));
    EXPECT_TRUE(is_counter_name(reason.name));
    EXPECT_FALSE(reason.label.empty());
    EXPECT_FALSE(reason.what.empty());
    const auto uncached = static_cast<cubby::Uncached>(i);
    EXPECT_EQ(&cubby::uncached_info(uncached), &reason);
    EXPECT_EQ(cubby::uncached_by_name(reason.name), uncached);
    EXPECT_EQ(cubby::uncached_name(uncached), reason.name);
    const std::string counter = "uncached_" + std::string(reason.name);
    std::size_t lines = 0;
    for (const StatInfo& stat : kStats) {
      if (stat.name != counter) continue;
      ++lines;
      EXPECT_EQ(stat.count, reason.count);
      EXPECT_EQ(stat.persisted, counter);
      EXPECT_FALSE(stat.label.empty());
      EXPECT_EQ(stat.what, reason.what);
    }
    EXPECT_EQ(lines, 1u);
    EXPECT_STREQ(cubby_uncached_name(i), std::string(reason.name).c_str());
    EXPECT_STREQ(cubby_uncached_label(i), std::string(reason.label).c_str());
  }
  EXPECT_EQ(cubby::uncached_by_name("no_such_reason"), cubby::Uncached::none);
  EXPECT_EQ(cubby::uncached_name(cubby::Uncached::none), "");
}

// The first detail of each reason: the process keeps the first it is told, and the JSON of a
// process (CUBBY_STATS_FILE, cubby_stats_json) carries those of the reasons counted, back and
// forth.
TEST(StatsTable, TheFirstDetailOfEachReasonIsKeptAndRoundTripsThroughJson) {
  cubby::note_uncached_detail(cubby::Uncached::compiled_elsewhere, "first");
  cubby::note_uncached_detail(cubby::Uncached::compiled_elsewhere, "second");
  cubby::note_uncached_detail(cubby::Uncached::none, "nothing");
  const cubby::UncachedDetails details = cubby::uncached_details();
  const auto at = [](cubby::Uncached reason) { return static_cast<std::size_t>(reason); };
  EXPECT_EQ(details[at(cubby::Uncached::compiled_elsewhere)], "first");

  Stats counted;
  counted.uncached_compiled_elsewhere = 1;
  const nlohmann::json json = cubby::uncached_first_to_json(counted, details);
  EXPECT_EQ(json, nlohmann::json({{"compiled_elsewhere", "first"}}));
  EXPECT_EQ(cubby::uncached_first_to_json(Stats{}, details), nlohmann::json::object());
  const cubby::UncachedDetails back = cubby::uncached_first_from_json(
      {{cubby::kUncachedFirstMember,
        {{"compiled_elsewhere", "first"}, {"bogus", "x"}, {"read_only", 3}}}});
  EXPECT_EQ(back[at(cubby::Uncached::compiled_elsewhere)], "first");
  EXPECT_EQ(back[at(cubby::Uncached::read_only)], "");
  EXPECT_EQ(cubby::uncached_first_from_json(nlohmann::json::array())[0], "");
}

// What a process persists: every counter with a persisted name, under it (times in integer
// microseconds), and persisted_names() lists exactly those plus the store's own counters.
TEST(StatsTable, PersistedDeltaAndNamesCoverTheTable) {
  const Stats before = numbered(1);
  const Stats after = numbered(4);
  const cubby::Counters delta = cubby::persisted_delta(before, after);
  std::set<std::string_view> expected;
  for (std::size_t i = 0; i < kStats.size(); ++i) {
    const StatInfo& stat = kStats[i];
    if (stat.persisted.empty()) continue;
    expected.insert(stat.persisted);
    SCOPED_TRACE(std::string(stat.name));
    ASSERT_TRUE(delta.contains(stat.persisted));
    const auto change = static_cast<std::int64_t>((i + 1) * 3);
    EXPECT_EQ(delta.find(stat.persisted)->second, stat.unit == Unit::ms ? change * 1000 : change);
  }
  EXPECT_EQ(delta.size(), expected.size());
  EXPECT_TRUE(cubby::persisted_delta(after, after).empty());  // zeros are left out

  for (const auto& counter : kStoreCounters) expected.insert(counter.name);
  const std::vector<std::string_view> names = cubby::persisted_names();
  EXPECT_EQ(std::set<std::string_view>(names.begin(), names.end()), expected);
  EXPECT_EQ(names.size(), expected.size());
}

// The persisted names are a file format: a counters file written by earlier versions (every name
// they wrote) still reads, each name one this version persists.
TEST(StatsTable, PersistedNamesOfEarlierVersionsAreStillPersisted) {
  const std::vector<std::string> earlier = {"hits_memory",       "hits_disk",
                                            "hits_remote",       "misses",
                                            "compiles",          "compile_failures",
                                            "corrupt",           "failed_writes",
                                            "evictions",         "bytes_read",
                                            "bytes_written",     "compile_us",
                                            "compile_us_saved",  "store_bytes",
                                            "store_entries",     "remote_misses",
                                            "remote_errors",     "remote_timeouts",
                                            "remote_skipped",    "remote_rejected",
                                            "remote_bytes_read", "remote_bytes_written",
                                            "remote_writes",     "remote_writes_dropped",
                                            "remote_us"};
  std::string text;
  for (const std::string& name : earlier) text += name + " 1\n";
  auto parsed = cubby::parse_counters(text);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->size(), earlier.size());
  const std::vector<std::string_view> names = cubby::persisted_names();
  const std::set<std::string_view> now(names.begin(), names.end());
  for (const std::string& name : earlier) EXPECT_TRUE(now.contains(name)) << name;
}

// The remote tier's thread-safe counters: one Stats on demand, times never counted.
TEST(StatsTable, AtomicStatsSnapshotsEveryCountCounter) {
  cubby::AtomicStats counted;
  for (std::size_t i = 0; i < kStats.size(); ++i) {
    if (kStats[i].count != nullptr) counted.add(static_cast<Stat>(i), i + 1);
  }
  counted.add(Stat::remote_errors);
  const Stats snapshot = counted.snapshot();
  for (std::size_t i = 0; i < kStats.size(); ++i) {
    const StatInfo& stat = kStats[i];
    SCOPED_TRACE(std::string(stat.name));
    if (stat.count != nullptr) {
      EXPECT_EQ(snapshot.*stat.count, i + 1 + (stat.name == "remote_errors" ? 1 : 0));
    } else {
      EXPECT_EQ(snapshot.*stat.ms, 0.0);
    }
  }
}

}  // namespace
