// The listener, through a child suite: per-test and per-suite cubby properties in the XML and
// JSON reports, and sharded runs (GTEST_TOTAL_SHARDS) that agree with an unsharded run.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "child_runner.hpp"
#include "cubby/testing/listener.hpp"

namespace cubby::testing {
namespace {

class ListenerReports : public ::testing::Test {
 protected:
  TempDir scratch_{"harness-listener"};
  std::string store() const { return (scratch_.path() / "store").string(); }
};

// Every counter of the table (cubby/stats.hpp) is a property cubby_<name>, with its value (times
// in ms, one decimal), besides the total cubby_hits.
TEST(ListenerProperties, EveryCounterOfTheTableIsRecorded) {
  Stats stats;
  for (std::size_t i = 0; i < kStats.size(); ++i) {
    if (kStats[i].count != nullptr) stats.*kStats[i].count = 100 + i;
    if (kStats[i].ms != nullptr) stats.*kStats[i].ms = 100.0 + static_cast<double>(i) + 0.375;
  }
  record_properties(stats, LookupTime{});
  const ::testing::TestResult& result =
      *::testing::UnitTest::GetInstance()->current_test_info()->result();
  std::map<std::string, std::string> recorded;
  for (int i = 0; i < result.test_property_count(); ++i) {
    recorded[result.GetTestProperty(i).key()] = result.GetTestProperty(i).value();
  }
  for (std::size_t i = 0; i < kStats.size(); ++i) {
    const std::string key = "cubby_" + std::string(kStats[i].name);
    ASSERT_TRUE(recorded.contains(key)) << key;
    EXPECT_EQ(recorded[key],
              kStats[i].count != nullptr ? std::to_string(100 + i) : std::to_string(100 + i) + ".4")
        << key;
  }
  EXPECT_EQ(recorded["cubby_hits"],
            std::to_string(stats.hits_memory + stats.hits_disk + stats.hits_remote));
}

TEST_F(ListenerReports, PropertiesAppearInTheXmlReport) {
  const std::string report = (scratch_.path() / "report.xml").string();
  const ChildRun run =
      run_child(scratch_.path(),
                {"--gtest_filter=Child.CompilesAlpha:Child.ReusesAlpha:Child.UsesNoKernel",
                 "--gtest_output=xml:" + report},
                {{"CUBBY_DIR", store()}});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string xml = read_text(report);

  const std::string compiles = xml_testcase(xml, "CompilesAlpha");
  ASSERT_FALSE(compiles.empty()) << xml;
  EXPECT_EQ(xml_property(compiles, "cubby_compiles"), "1");
  EXPECT_EQ(xml_property(compiles, "cubby_misses"), "1");
  EXPECT_EQ(xml_property(compiles, "cubby_hits"), "0");
  ASSERT_TRUE(xml_property(compiles, "cubby_compile_ms").has_value());
  EXPECT_GT(std::stod(*xml_property(compiles, "cubby_compile_ms")), 0.0);

  // A compile's wall time is miss time, not lookup time.
  EXPECT_EQ(xml_property(compiles, "cubby_lookups"), "0");
  EXPECT_EQ(xml_property(compiles, "cubby_lookup_ms"), "0.000");
  ASSERT_TRUE(xml_property(compiles, "cubby_miss_ms").has_value());
  EXPECT_GE(std::stod(*xml_property(compiles, "cubby_miss_ms")),
            std::stod(*xml_property(compiles, "cubby_compile_ms")) - 0.1);

  const std::string reuses = xml_testcase(xml, "ReusesAlpha");
  EXPECT_EQ(xml_property(reuses, "cubby_hits_memory"), "1");
  EXPECT_EQ(xml_property(reuses, "cubby_compiles"), "0");
  EXPECT_EQ(xml_property(reuses, "cubby_lookups"), "1");
  EXPECT_EQ(xml_property(reuses, "cubby_miss_ms"), "0.000");

  const std::string none = xml_testcase(xml, "UsesNoKernel");
  EXPECT_EQ(xml_property(none, "cubby_hits"), "0");
  EXPECT_EQ(xml_property(none, "cubby_compiles"), "0");

  // The suite's and the run's totals.
  EXPECT_EQ(xml_attribute(xml, "testsuite", "cubby_compiles"), "1");
  EXPECT_EQ(xml_attribute(xml, "testsuite", "cubby_hits_memory"), "1");
  EXPECT_EQ(xml_attribute(xml, "testsuites", "cubby_compiles"), "1");
  EXPECT_EQ(xml_attribute(xml, "testsuites", "cubby_dir"), store());
}

TEST_F(ListenerReports, PropertiesAppearInTheJsonReport) {
  // Warm the store first: the JSON run is then all disk hits.
  ASSERT_EQ(
      run_child(scratch_.path(), {"--gtest_filter=Child.CompilesAlpha"}, {{"CUBBY_DIR", store()}})
          .exit_code,
      0);
  const std::string report = (scratch_.path() / "report.json").string();
  const ChildRun run = run_child(
      scratch_.path(), {"--gtest_filter=Child.CompilesAlpha", "--gtest_output=json:" + report},
      {{"CUBBY_DIR", store()}});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto json = nlohmann::json::parse(read_text(report));
  EXPECT_EQ(json.at("cubby_hits_disk"), "1");
  EXPECT_EQ(json.at("cubby_compiles"), "0");
  const auto& suite = json.at("testsuites").at(0);
  EXPECT_EQ(suite.at("cubby_hits_disk"), "1");
  const auto& test = suite.at("testsuite").at(0);
  EXPECT_EQ(test.at("name"), "CompilesAlpha");
  EXPECT_EQ(test.at("cubby_hits_disk"), "1");
  EXPECT_EQ(test.at("cubby_compiles"), "0");
  EXPECT_GT(std::stod(test.at("cubby_compile_ms_saved").get<std::string>()), 0.0);
  // The lookup's wall time, per test and for the run.
  EXPECT_EQ(test.at("cubby_lookups"), "1");
  EXPECT_GT(std::stod(test.at("cubby_lookup_ms").get<std::string>()), 0.0);
  EXPECT_EQ(json.at("cubby_lookups"), "1");
  EXPECT_GT(std::stod(json.at("cubby_lookup_ms").get<std::string>()), 0.0);
  EXPECT_EQ(json.at("cubby_miss_ms"), "0.000");
  EXPECT_TRUE(json.contains("cubby_arch_probe_ms"));
}

double property_ms(const std::string& element, const std::string& name) {
  const auto value = xml_property(element, name);
  EXPECT_TRUE(value.has_value()) << name << " missing in " << element;
  return value ? std::stod(*value) : -1.0;
}

double attribute_ms(const std::string& xml, const std::string& tag, const std::string& name) {
  const auto value = xml_attribute(xml, tag, name);
  EXPECT_TRUE(value.has_value()) << name << " missing on <" << tag << ">";
  return value ? std::stod(*value) : -1.0;
}

TEST_F(ListenerReports, WarmLookupTimeIsCountedOncePerCall) {
  const std::string filter =
      "--gtest_filter=Child.CompilesAlpha:Child.ReusesAlpha:Child.UsesNoKernel:"
      "Child.DirectCacheCompile";
  ASSERT_EQ(run_child(scratch_.path(), {filter}, {{"CUBBY_DIR", store()}}).exit_code, 0);
  const std::string report = (scratch_.path() / "warm.xml").string();
  const ChildRun run = run_child(scratch_.path(), {filter, "--gtest_output=xml:" + report},
                                 {{"CUBBY_DIR", store()}});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string xml = read_text(report);

  // KernelTest::compile -> cubby::testing::compile -> Cache::compile: one timed lookup per call.
  const std::string disk_hit = xml_testcase(xml, "CompilesAlpha");
  EXPECT_EQ(xml_property(disk_hit, "cubby_hits_disk"), "1");
  EXPECT_EQ(xml_property(disk_hit, "cubby_lookups"), "1");
  EXPECT_GT(property_ms(disk_hit, "cubby_lookup_ms"), 0.0);
  const std::string memory_hit = xml_testcase(xml, "ReusesAlpha");
  EXPECT_EQ(xml_property(memory_hit, "cubby_lookups"), "1");
  const std::string none = xml_testcase(xml, "UsesNoKernel");
  EXPECT_EQ(xml_property(none, "cubby_lookups"), "0");
  EXPECT_EQ(xml_property(none, "cubby_lookup_ms"), "0.000");
  // A hit through cache().compile is a hit, but not a timed harness lookup.
  const std::string direct = xml_testcase(xml, "DirectCacheCompile");
  EXPECT_EQ(xml_property(direct, "cubby_hits"), "1");
  EXPECT_EQ(xml_property(direct, "cubby_lookups"), "0");

  // The suite's and the run's totals are the sum of the tests' (each rounded to a microsecond).
  const double tests_ms = property_ms(disk_hit, "cubby_lookup_ms") +
                          property_ms(memory_hit, "cubby_lookup_ms") +
                          property_ms(direct, "cubby_lookup_ms");
  EXPECT_EQ(xml_attribute(xml, "testsuite", "cubby_lookups"), "2");
  EXPECT_EQ(xml_attribute(xml, "testsuites", "cubby_lookups"), "2");
  EXPECT_EQ(xml_attribute(xml, "testsuites", "cubby_hits"), "3");
  EXPECT_NEAR(attribute_ms(xml, "testsuite", "cubby_lookup_ms"), tests_ms, 0.003);
  EXPECT_NEAR(attribute_ms(xml, "testsuites", "cubby_lookup_ms"), tests_ms, 0.003);
  EXPECT_EQ(xml_attribute(xml, "testsuites", "cubby_miss_ms"), "0.000");
  EXPECT_GE(attribute_ms(xml, "testsuites", "cubby_arch_probe_ms"), 0.0);
  // The summary line shows the same lookups.
  EXPECT_NE(run.output.find("[cubby] hits: 3 (memory 1, disk 2, remote 0), "), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("; hit lookups: "), std::string::npos) << run.output;
}

// Test name -> (result, cubby_compiles) of every test that ran, from an XML report.
std::map<std::string, std::pair<std::string, std::string>> outcomes(const std::string& xml) {
  std::map<std::string, std::pair<std::string, std::string>> result;
  std::size_t at = 0;
  while ((at = xml.find("<testcase name=\"", at)) != std::string::npos) {
    const std::size_t name_start = at + 16;
    const std::string name = xml.substr(name_start, xml.find('"', name_start) - name_start);
    const std::string element = xml_testcase(xml, name);
    const std::string status = element.find("<failure") != std::string::npos   ? "failed"
                               : element.find("<skipped") != std::string::npos ? "skipped"
                                                                               : "passed";
    if (element.find("status=\"run\"") != std::string::npos) {
      result[name] = {status, xml_property(element, "cubby_compiles").value_or("?")};
    }
    at = name_start;
  }
  return result;
}

TEST_F(ListenerReports, ShardedRunsAgreeWithAnUnshardedRun) {
  // The child's tests that can be warm (ChildUncached's compile without the store on every run).
  const std::string warmable = "--gtest_filter=-ChildUncached.*";
  // Cold: three shards at once on an empty store (as ctest -j would run them) all pass.
  std::string parallel = "(";
  for (int shard = 0; shard < 3; ++shard) {
    const std::string rc = (scratch_.path() / ("cold" + std::to_string(shard) + ".rc")).string();
    parallel +=
        "(" +
        child_command({warmable, "--gtest_output=xml:" + (scratch_.path() / "cold").string() +
                                     std::to_string(shard) + ".xml"},
                      {{"CUBBY_DIR", store()},
                       {"GTEST_TOTAL_SHARDS", "3"},
                       {"GTEST_SHARD_INDEX", std::to_string(shard)}}) +
        " >/dev/null 2>&1; echo $? >" + shell_quote(rc) + ") & ";
  }
  parallel += "wait)";
  ASSERT_EQ(std::system(parallel.c_str()), 0);
  for (int shard = 0; shard < 3; ++shard) {
    EXPECT_EQ(read_text(scratch_.path() / ("cold" + std::to_string(shard) + ".rc")), "0\n")
        << "shard " << shard;
  }

  // Warm: the unsharded run and the union of three shards run the same tests, with the same
  // results, and nothing compiles.
  const std::string whole = (scratch_.path() / "whole.xml").string();
  ASSERT_EQ(run_child(scratch_.path(), {warmable, "--gtest_output=xml:" + whole},
                      {{"CUBBY_DIR", store()}})
                .exit_code,
            0);
  const auto expected = outcomes(read_text(whole));
  ASSERT_EQ(expected.size(), 6u);
  std::map<std::string, std::pair<std::string, std::string>> merged;
  for (int shard = 0; shard < 3; ++shard) {
    const std::string report =
        (scratch_.path() / ("shard" + std::to_string(shard) + ".xml")).string();
    const ChildRun run = run_child(scratch_.path(), {warmable, "--gtest_output=xml:" + report},
                                   {{"CUBBY_DIR", store()},
                                    {"GTEST_TOTAL_SHARDS", "3"},
                                    {"GTEST_SHARD_INDEX", std::to_string(shard)}});
    EXPECT_EQ(run.exit_code, 0) << run.output;
    for (const auto& [name, outcome] : outcomes(read_text(report))) {
      EXPECT_TRUE(merged.emplace(name, outcome).second) << name << " ran in two shards";
    }
  }
  EXPECT_EQ(merged, expected);
  for (const auto& [name, outcome] : merged) EXPECT_EQ(outcome.second, "0") << name;
}

}  // namespace
}  // namespace cubby::testing
