// The Environment: the summary line, the store it opens (CUBBY_DIR or --cubby_dir), and a child
// suite that passes with and without a GPU (GPU tests skip with the reason, or run).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_runner.hpp"
#include "cubby/driver.hpp"
#include "cubby/testing/environment.hpp"
#include "storage/local/store_stats.hpp"

namespace cubby::testing {
namespace {

TEST(SummaryLine, CountsHitsByTierCompilesAndTimeSaved) {
  Stats stats;
  stats.hits_memory = 2;
  stats.hits_disk = 22;
  stats.compiles = 1;
  stats.compile_ms = 1500;
  stats.compile_ms_saved = 31200;
  LookupTime time;
  time.hits = 24;
  time.hit_ms = 3.24;
  time.misses = 1;
  time.miss_ms = 1600;
  // The wording of cubby::summary_lines (shared with the pytest plugin and `cubby stats`).
  EXPECT_EQ(summary_line(stats, time, "/s"),
            "[cubby] hits: 24 (memory 2, disk 22, remote 0), misses: 0, compiles: 1 (1.50 s), "
            "compile time saved: 31.20 s; hit lookups: 3.2 ms; store /s");
  // Hits that did not go through cubby::testing::compile have no lookup time to show.
  EXPECT_EQ(summary_line(stats, LookupTime{}, "/s"),
            "[cubby] hits: 24 (memory 2, disk 22, remote 0), misses: 0, compiles: 1 (1.50 s), "
            "compile time saved: 31.20 s; store /s");
  Stats none;
  EXPECT_EQ(summary_line(none, LookupTime{}, "/s"),
            "[cubby] hits: 0 (memory 0, disk 0, remote 0), misses: 0, compiles: 0 (0.00 s), "
            "compile time saved: 0.00 s; store /s");
}

TEST(SummaryLine, LookupTimeDifferenceIsFieldByField) {
  LookupTime before;
  before.hits = 3;
  before.hit_ms = 1.5;
  before.arch_probe_ms = 40;
  LookupTime after = before;
  after.hits = 5;
  after.hit_ms = 2.0;
  after.misses = 1;
  after.miss_ms = 900;
  const LookupTime d = difference(after, before);
  EXPECT_EQ(d.hits, 2u);
  EXPECT_DOUBLE_EQ(d.hit_ms, 0.5);
  EXPECT_EQ(d.misses, 1u);
  EXPECT_DOUBLE_EQ(d.miss_ms, 900.0);
  EXPECT_DOUBLE_EQ(d.arch_probe_ms, 0.0);
}

TEST(SummaryLine, DifferenceIsFieldByField) {
  Stats before;
  before.hits_disk = 3;
  before.compile_ms = 10;
  Stats after = before;
  after.hits_disk = 5;
  after.compiles = 2;
  after.compile_ms = 30;
  const Stats d = difference(after, before);
  EXPECT_EQ(d.hits_disk, 2u);
  EXPECT_EQ(d.compiles, 2u);
  EXPECT_DOUBLE_EQ(d.compile_ms, 20.0);
  EXPECT_EQ(d.hits_memory, 0u);
}

class EnvironmentRuns : public ::testing::Test {
 protected:
  TempDir scratch_{"harness-env"};
  std::string store() const { return (scratch_.path() / "store").string(); }
};

TEST_F(EnvironmentRuns, PrintsTheSummaryColdThenWarm) {
  const std::vector<std::string> filter = {"--gtest_filter=Child.CompilesAlpha:Child.ReusesAlpha"};
  const ChildRun cold = run_child(scratch_.path(), filter, {{"CUBBY_DIR", store()}});
  ASSERT_EQ(cold.exit_code, 0) << cold.output;
  EXPECT_NE(
      cold.output.find("[cubby] hits: 1 (memory 1, disk 0, remote 0), misses: 1, compiles: 1 ("),
      std::string::npos)
      << cold.output;
  EXPECT_NE(cold.output.find("; hit lookups: "), std::string::npos) << cold.output;
  const ChildRun warm = run_child(scratch_.path(), filter, {{"CUBBY_DIR", store()}});
  ASSERT_EQ(warm.exit_code, 0) << warm.output;
  EXPECT_NE(
      warm.output.find("[cubby] hits: 2 (memory 1, disk 1, remote 0), misses: 0, compiles: 0 ("),
      std::string::npos)
      << warm.output;
  EXPECT_NE(warm.output.find("; hit lookups: "), std::string::npos) << warm.output;
  EXPECT_NE(warm.output.find("; store " + store()), std::string::npos);
}

// The summary names the programs compiled without the store: how many of all, the reason and
// the first one's detail.
TEST_F(EnvironmentRuns, TheSummaryNamesProgramsCompiledWithoutTheStoreAndWhy) {
  const ChildRun run = run_child(
      scratch_.path(), {"--gtest_filter=ChildUncached.CompilesWithoutTheStore:Child.CompilesAlpha"},
      {{"CUBBY_DIR", store()}});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("; 1 of 2 programs compiled without the store: an option the key "
                            "cannot cover, first -Xcudafe --no_rtti (program cubby_program.cu); "),
            std::string::npos)
      << run.output;
}

TEST_F(EnvironmentRuns, CountersReachTheStoreAndTheStatsFileAtTheEndOfTheRun) {
  // The session's Cache is never destroyed; Environment::TearDown finishes it, so even a warm
  // run's hits (which write nothing) reach the store's counters and CUBBY_STATS_FILE.
  const std::vector<std::string> filter = {"--gtest_filter=Child.CompilesAlpha"};
  const std::string stats_file = (scratch_.path() / "stats.jsonl").string();
  const std::map<std::string, std::string> env = {{"CUBBY_DIR", store()},
                                                  {"CUBBY_STATS_FILE", stats_file}};
  const ChildRun cold = run_child(scratch_.path(), filter, env);
  ASSERT_EQ(cold.exit_code, 0) << cold.output;
  const ChildRun warm = run_child(scratch_.path(), filter, env);
  ASSERT_EQ(warm.exit_code, 0) << warm.output;
  auto counters = StoreStats(store()).read();
  ASSERT_TRUE(counters) << counters.error().message;
  EXPECT_EQ(counters->at("compiles"), 1);
  EXPECT_EQ(counters->at("hits_disk"), 1);
  const std::string lines = read_text(stats_file);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 2) << lines;  // one per run
  EXPECT_NE(lines.find("\"hits_disk\":1"), std::string::npos) << lines;
}

// The stress case of prefetch: four processes of one suite started at once on a store that holds
// the suite's recipes but none of its entries (every key changed) compile each kernel once, among
// them and the prefetch workers, and all pass.
TEST_F(EnvironmentRuns, FourProcessesOfOneSuiteStartedTogetherCompileEachKeyOnce) {
  const std::vector<std::string> filter = {"--gtest_filter=Child.*"};
  const ChildRun first = run_child(scratch_.path(), filter, {{"CUBBY_DIR", store()}});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_TRUE(std::filesystem::exists(std::filesystem::path(store()) / "manifests"));
  std::filesystem::remove_all(std::filesystem::path(store()) / "entries");
  const std::string stats_file = (scratch_.path() / "stats.jsonl").string();
  std::vector<ChildRun> runs(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::filesystem::path own = scratch_.path() / ("run" + std::to_string(i));
    std::filesystem::create_directories(own);
    threads.emplace_back([&, i, own] {
      runs[i] = run_child(own, filter, {{"CUBBY_DIR", store()}, {"CUBBY_STATS_FILE", stats_file}});
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const ChildRun& run : runs) EXPECT_EQ(run.exit_code, 0) << run.output;
  std::istringstream lines(read_text(stats_file));
  std::uint64_t compiles = 0;
  for (std::string line; std::getline(lines, line);) {
    compiles += nlohmann::json::parse(line).at("compiles").get<std::uint64_t>();
  }
  EXPECT_EQ(compiles, 3u) << "alpha, beta and gamma, once each:\n" << read_text(stats_file);
}

TEST_F(EnvironmentRuns, QuietPrintsNoSummary) {
  const ChildRun run =
      run_child(scratch_.path(), {"--gtest_filter=Child.UsesNoKernel", "--cubby_quiet"},
                {{"CUBBY_DIR", store()}});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.find("[cubby]"), std::string::npos) << run.output;
}

TEST_F(EnvironmentRuns, DirFlagOverridesCubbyDir) {
  const std::string flag_store = (scratch_.path() / "flag-store").string();
  const ChildRun run = run_child(
      scratch_.path(), {"--gtest_filter=Child.CompilesAlpha", "--cubby_dir=" + flag_store},
      {{"CUBBY_DIR", store()}});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(flag_store) / "entries"));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(store()) / "entries"));
}

TEST_F(EnvironmentRuns, WholeSuitePassesWithOrWithoutAGpu) {
  const std::string report = (scratch_.path() / "report.xml").string();
  const ChildRun run =
      run_child(scratch_.path(), {"--gtest_output=xml:" + report}, {{"CUBBY_DIR", store()}});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const std::string gpu_test = xml_testcase(read_text(report), "LaunchesAlpha");
  ASSERT_FALSE(gpu_test.empty());
  if (gpu_status().ok()) {
    EXPECT_EQ(gpu_test.find("<skipped"), std::string::npos) << gpu_test;
    EXPECT_EQ(gpu_test.find("<failure"), std::string::npos) << gpu_test;
  } else {
    EXPECT_NE(gpu_test.find("<skipped message=\""), std::string::npos) << gpu_test;
    EXPECT_NE(gpu_test.find("no usable GPU"), std::string::npos) << gpu_test;
  }
}

TEST_F(EnvironmentRuns, ListingTestsPrintsOnlyTheList) {
  // gtest_discover_tests(PRE_TEST) parses this output: nothing of cubby's may appear in it.
  const ChildRun run = run_child(scratch_.path(), {"--gtest_list_tests"}, {{"CUBBY_DIR", store()}});
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.output.find("cubby"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("CompilesAlpha"), std::string::npos);
}

}  // namespace
}  // namespace cubby::testing
