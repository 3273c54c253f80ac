// --cubby_require_warm / CUBBY_REQUIRE_WARM through a child suite: a test that compiles fails
// with the key's fields, a test that hits passes.
#include <gtest/gtest.h>

#include <string>

#include "child_runner.hpp"
#include "cubby/testing/session.hpp"

namespace cubby::testing {
namespace {

class RequireWarm : public ::testing::Test {
 protected:
  TempDir scratch_{"harness-warm"};
  std::string store() const { return (scratch_.path() / "store").string(); }
  std::string report() const { return (scratch_.path() / "report.xml").string(); }
};

TEST_F(RequireWarm, FlagFailsATestThatCompilesAndPassesOneThatHits) {
  const ChildRun cold = run_child(scratch_.path(),
                                  {"--gtest_filter=Child.CompilesAlpha:Child.UsesNoKernel",
                                   "--cubby_require_warm", "--gtest_output=xml:" + report()},
                                  {{"CUBBY_DIR", store()}});
  EXPECT_EQ(cold.exit_code, 1) << cold.output;
  std::string xml = read_text(report());
  const std::string failed = xml_testcase(xml, "CompilesAlpha");
  EXPECT_NE(failed.find("<failure"), std::string::npos) << xml;
  EXPECT_NE(failed.find("--cubby_require_warm"), std::string::npos);
  // The key's fields are listed in the one key-dump layout (that of `cubby compile --explain`),
  // so two runs can be compared.
  EXPECT_NE(failed.find("key fields (label, hash, value):"), std::string::npos) << failed;
  for (const char* field : {"nvrtc_version", "arch", "source", "name_expression"}) {
    EXPECT_NE(failed.find(field), std::string::npos) << field;
  }
  EXPECT_EQ(xml_testcase(xml, "UsesNoKernel").find("<failure"), std::string::npos);

  // The failed run stored the entry: the same test now hits and passes.
  const ChildRun warm = run_child(scratch_.path(),
                                  {"--gtest_filter=Child.CompilesAlpha", "--cubby_require_warm",
                                   "--gtest_output=xml:" + report()},
                                  {{"CUBBY_DIR", store()}});
  EXPECT_EQ(warm.exit_code, 0) << warm.output;
  xml = read_text(report());
  EXPECT_EQ(xml_property(xml_testcase(xml, "CompilesAlpha"), "cubby_hits_disk"), "1");
}

TEST_F(RequireWarm, EnvironmentVariableDoesTheSame) {
  const ChildRun cold = run_child(scratch_.path(), {"--gtest_filter=Child.CompilesBeta"},
                                  {{"CUBBY_DIR", store()}, {"CUBBY_REQUIRE_WARM", "1"}});
  EXPECT_EQ(cold.exit_code, 1) << cold.output;
  EXPECT_NE(cold.output.find("CUBBY_REQUIRE_WARM is set"), std::string::npos) << cold.output;
  const ChildRun warm = run_child(scratch_.path(), {"--gtest_filter=Child.CompilesBeta"},
                                  {{"CUBBY_DIR", store()}, {"CUBBY_REQUIRE_WARM", "1"}});
  EXPECT_EQ(warm.exit_code, 0) << warm.output;
}

TEST_F(RequireWarm, CompilesThatBypassTheHarnessAreCaughtToo) {
  const ChildRun cold = run_child(
      scratch_.path(), {"--gtest_filter=Child.DirectCacheCompile", "--cubby_require_warm"},
      {{"CUBBY_DIR", store()}});
  EXPECT_EQ(cold.exit_code, 1) << cold.output;
  EXPECT_NE(cold.output.find("bypasses cubby::testing::compile"), std::string::npos) << cold.output;
  // Reported once, by the listener, in the test that compiled.
  EXPECT_NE(cold.output.find("[  FAILED  ] Child.DirectCacheCompile"), std::string::npos);
}

// A program compiled without the store can never be warm: the failure says why (the reason and
// its detail), on every run, whether the test compiled through the harness or around it.
TEST_F(RequireWarm, AProgramCompiledWithoutTheStoreFailsWithItsReason) {
  for (int run = 0; run < 2; ++run) {
    const ChildRun cold =
        run_child(scratch_.path(),
                  {"--gtest_filter=ChildUncached.CompilesWithoutTheStore", "--cubby_require_warm"},
                  {{"CUBBY_DIR", store()}});
    EXPECT_EQ(cold.exit_code, 1) << cold.output;
    EXPECT_NE(cold.output.find("without the store although --cubby_require_warm / "
                               "CUBBY_REQUIRE_WARM is set: an option the key cannot cover, "
                               "-Xcudafe --no_rtti (program cubby_program.cu)"),
              std::string::npos)
        << cold.output;
  }
  const ChildRun direct = run_child(
      scratch_.path(),
      {"--gtest_filter=ChildUncached.DirectCompileWithoutTheStore", "--cubby_require_warm"},
      {{"CUBBY_DIR", store()}});
  EXPECT_EQ(direct.exit_code, 1) << direct.output;
  EXPECT_NE(direct.output.find("bypasses cubby::testing::compile"), std::string::npos);
  EXPECT_NE(direct.output.find("; 1 of 1 programs compiled without the store: an option the key "
                               "cannot cover, first -Xcudafe --no_rtti (program cubby_program.cu)"),
            std::string::npos)
      << direct.output;
}

TEST_F(RequireWarm, FlagOverridesTheEnvironment) {
  const ChildRun run =
      run_child(scratch_.path(), {"--gtest_filter=Child.CompilesBeta", "--cubby_require_warm=0"},
                {{"CUBBY_DIR", store()}, {"CUBBY_REQUIRE_WARM", "1"}});
  EXPECT_EQ(run.exit_code, 0) << run.output;
}

TEST_F(RequireWarm, MalformedSettingStopsTheRunWithWhatToDo) {
  const ChildRun run =
      run_child(scratch_.path(), {}, {{"CUBBY_DIR", store()}, {"CUBBY_REQUIRE_WARM", "maybe"}});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("CUBBY_REQUIRE_WARM=maybe"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("1/0"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace cubby::testing
