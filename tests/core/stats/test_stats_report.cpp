// Tests of the per-process stats report (core/src/stats/stats_report.cpp) through CUBBY_STATS_FILE.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cubby/cache.hpp"
#include "cubby/cubby.h"
#include "stats/stats_report.hpp"
#include "test_support.hpp"

namespace {

using cubby::testing::ScopedEnv;
using cubby::testing::TempDir;

std::vector<nlohmann::json> lines_of(const std::filesystem::path& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// The library's JSON text never fails: bytes that are not UTF-8 (in values and in keys) become
// U+FFFD, the rest is kept, and the text parses back.
TEST(StatsReport, JsonTextReplacesBytesThatAreNotUtf8) {
  const nlohmann::json document = {{"path", "/tmp/store\xfe/\xff.cu"},
                                   {"names", {{"k\xc3", "ok \xc3\xa9"}}}};
  const std::string text = cubby::json_text(document);
  EXPECT_EQ(text,
            "{\"names\":{\"k\xEF\xBF\xBD\":\"ok \xc3\xa9\"},"
            "\"path\":\"/tmp/store\xEF\xBF\xBD/\xEF\xBF\xBD.cu\"}");
  EXPECT_EQ(nlohmann::json::parse(text)["path"], "/tmp/store\xEF\xBF\xBD/\xEF\xBF\xBD.cu");
}

TEST(StatsReport, AppendsOneLinePerReportWithThePid) {
  TempDir dir("stats-report");
  const auto file = dir / "stats.jsonl";
  ScopedEnv env("CUBBY_STATS_FILE", file.string());
  cubby::Stats stats;
  stats.hits_disk = 3;
  stats.compile_ms_saved = 1.5;
  cubby::report_stats_to_file(stats);
  stats.misses = 2;
  cubby::report_stats_to_file(stats);
  const auto lines = lines_of(file);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["hits_disk"], 3);
  EXPECT_EQ(lines[0]["misses"], 0);
  EXPECT_DOUBLE_EQ(lines[0]["compile_ms_saved"].get<double>(), 1.5);
  EXPECT_EQ(lines[1]["misses"], 2);
  EXPECT_EQ(lines[1]["pid"], static_cast<long long>(::getpid()));
}

// A line carries the process's first detail of each reason it counts, so that the pytest summary
// can name the first program compiled without the store by any process of the session.
TEST(StatsReport, ALineCarriesTheFirstDetailOfTheReasonsItCounts) {
  TempDir dir("stats-report");
  const auto file = dir / "stats.jsonl";
  ScopedEnv env("CUBBY_STATS_FILE", file.string());
  cubby::note_uncached_detail(cubby::Uncached::read_only, "program r.cu");
  cubby::Stats stats;
  stats.uncached_read_only = 1;
  cubby::report_stats_to_file(stats);
  stats = cubby::Stats{};
  stats.compiles = 1;
  cubby::report_stats_to_file(stats);
  const auto lines = lines_of(file);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["uncached_read_only"], 1);
  EXPECT_EQ(lines[0]["uncached_first"], nlohmann::json({{"read_only", "program r.cu"}}));
  EXPECT_EQ(lines[1]["uncached_first"], nlohmann::json::object());  // not counted in this line
}

TEST(StatsReport, WritesNothingWhenUnsetOrWhenNothingWasCounted) {
  TempDir dir("stats-report");
  const auto file = dir / "stats.jsonl";
  {
    ScopedEnv env("CUBBY_STATS_FILE", std::nullopt);
    cubby::Stats stats;
    stats.compiles = 1;
    cubby::report_stats_to_file(stats);
  }
  {
    ScopedEnv env("CUBBY_STATS_FILE", file.string());
    cubby::report_stats_to_file(cubby::Stats{});
  }
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST(StatsReport, AnUnwritableFileIsSkipped) {
  ScopedEnv env("CUBBY_STATS_FILE", "/nonexistent-cubby-folder/stats.jsonl");
  cubby::Stats stats;
  stats.misses = 1;
  cubby::report_stats_to_file(stats);  // must not throw or crash
  EXPECT_FALSE(std::filesystem::exists("/nonexistent-cubby-folder"));
}

TEST(StatsReport, ACacheReportsItsStatsWhenItIsDestroyed) {
  TempDir dir("stats-report");
  const auto file = dir / "stats.jsonl";
  ScopedEnv env("CUBBY_STATS_FILE", file.string());
  ScopedEnv enabled("CUBBY_DISABLE", std::nullopt);
  cubby_cache* cache = nullptr;
  ASSERT_EQ(cubby_open((dir / "store").c_str(), &cache), CUBBY_OK) << cubby_last_error();
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_blob_get(cache, "test", "absent", &result), CUBBY_OK);
  EXPECT_FALSE(std::filesystem::exists(file));  // reported at destruction, not before
  cubby_close(cache);
  const auto lines = lines_of(file);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["misses"], 1);
}

TEST(StatsReport, FinishReportsWhatIsNewSoLinesSumToTheTotals) {
  TempDir dir("stats-report");
  const auto file = dir / "stats.jsonl";
  ScopedEnv env("CUBBY_STATS_FILE", file.string());
  cubby::Config config;
  config.dir = dir / "store";
  {
    cubby::Cache cache(config);
    (void)cache.store_blob("test", "one", "payload", 2.0);
    EXPECT_FALSE(cache.load_blob("test", "absent"));
    cache.finish();
    cache.finish();                               // nothing new: no line
    EXPECT_TRUE(cache.load_blob("test", "one"));  // still usable
  }                                               // the destructor reports the memory hit only
  const auto lines = lines_of(file);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["misses"], 1);
  EXPECT_EQ(lines[0]["hits_memory"], 0);
  EXPECT_EQ(lines[1]["misses"], 0);
  EXPECT_EQ(lines[1]["hits_memory"], 1);
}

}  // namespace
