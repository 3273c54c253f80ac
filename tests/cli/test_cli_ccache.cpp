// ccache's habits in the `cubby` tool as ccache users type them (cli/registry.cpp, cli/gc.cpp,
// cli/stats.cpp, cli/config.cpp; issue 36): a bare -M number is GiB, sizes are shown in the units
// max_size is written in, an age needs a unit, short options bundle (-sz), an unknown option is
// named, -z says one line, -s shows the remote tier's rows only with a remote; and the wording of
// `cubby compile`'s refused options and of a store path under a regular file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_process.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using cubby::testing::cli_json;
using cubby::testing::read_text;
using cubby::testing::TempDir;
using cubby::testing::write_text;
using nlohmann::json;
using Outcome = cubby::testing::CliOutcome;

constexpr const char* kKernel = cubby::testing::kTemplateKernel;
using cubby::testing::stats_row;

class CcacheCliTest : public ::testing::Test {
 protected:
  TempDir root_{"cli-ccache"};
  fs::path store_ = root_ / "store";
  fs::path kernel_ = root_ / "k.cu";

  void SetUp() override { write_text(kernel_, kKernel); }

  // `cubby args...` with CUBBY_DIR=store_ and no other CUBBY_* variable but `env`.
  Outcome cubby(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                const fs::path& store = {}) {
    const cubby::testing::CliOutputFiles files{root_ / "out.txt", root_ / "err.txt"};
    return cubby::testing::finish_cli(
        cubby::testing::start_cli(args, store.empty() ? store_ : store, files, env, "CUBBY_"),
        files);
  }
  json parse(const Outcome& run) {
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return cli_json(run);
  }
  void compile() {
    parse(cubby({"compile", kernel_.string(), "--arch", "sm_90", "--json", "--name-expr",
                 "ns::k<float, 1>"}));
  }
};

TEST_F(CcacheCliTest, ABareMaxSizeIsGibAsInCcache) {
  const Outcome set = cubby({"-M", "5"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_TRUE(set.out.starts_with("5 (5.0 GiB: a number alone is GiB, as in ccache")) << set.out;
  EXPECT_NE(read_text(store_ / "cubby.conf").find("max_size = 5\n"), std::string::npos);
  EXPECT_EQ(parse(cubby({"stats", "--json"}))["max_size"], 5ull << 30);
  EXPECT_EQ(set.err, "");  // no "below 1 MiB" warning: 5 is not 5 bytes
  EXPECT_EQ(parse(cubby({"stats", "--json"}, {"CUBBY_MAX_SIZE=2"}))["max_size"], 2ull << 30);
  EXPECT_EQ(parse(cubby({"gc", "--json", "--max-size", "1.5"}))["max_size"], 3ull << 29);
  EXPECT_EQ(parse(cubby({"stats", "--json"}, {"CUBBY_MAX_SIZE=5000000B"}))["max_size"], 5'000'000u);
}

TEST_F(CcacheCliTest, SizesAreShownInTheUnitsMaxSizeIsWrittenIn) {
  const Outcome decimal = cubby({"-M", "2G"});
  ASSERT_EQ(decimal.exit_code, 0) << decimal.err;
  EXPECT_TRUE(decimal.out.starts_with("2G (2.0 GB; `cubby stats` shows sizes in powers of 1000"))
      << decimal.out;
  const Outcome stats = cubby({"-s"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_TRUE(stats_row(stats.out, "max size").starts_with("2.0 GB (")) << stats.out;
  EXPECT_NE(stats_row(stats.out, "max size").find("powers of 1000"), std::string::npos);
  EXPECT_NE(stats_row(stats.out, "bytes").find(" of 2.0 GB)"), std::string::npos) << stats.out;
  EXPECT_EQ(stats.out.find("GiB"), std::string::npos) << stats.out;

  ASSERT_EQ(cubby({"-M", "2Gi"}).exit_code, 0);
  const Outcome binary = cubby({"-s"});
  EXPECT_TRUE(stats_row(binary.out, "max size").starts_with("2.0 GiB (")) << binary.out;
  EXPECT_NE(stats_row(binary.out, "max size").find("powers of 1024"), std::string::npos);
  const Outcome gc = cubby({"gc", "--max-size", "3G"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("bound     3.0 GB (this run only; the store's max_size stays 2.1 GB"),
            std::string::npos)
      << gc.out;
}

TEST_F(CcacheCliTest, AnAgeWithoutAUnitIsRefusedWithTheFormsAccepted) {
  compile();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--evict-older-than", "7"}, {"gc", "--older-than", "7"}}) {
    const Outcome bare = cubby(args);
    EXPECT_EQ(bare.exit_code, 2) << args[0];
    EXPECT_NE(bare.err.find("the age \"7\" has no unit"), std::string::npos) << bare.err;
    EXPECT_NE(bare.err.find("7d (days), 12h, 30m or 90s"), std::string::npos) << bare.err;
  }
  EXPECT_EQ(parse(cubby({"stats", "--json"}))["entries"], 1);  // nothing was removed
  EXPECT_EQ(parse(cubby({"--json", "--evict-older-than", "7s"}))["older_than_s"], 7);
  EXPECT_EQ(parse(cubby({"--json", "--evict-older-than", "7d"}))["older_than_s"], 7 * 86400);
}

TEST_F(CcacheCliTest, ShortOptionsBundleAsInCcache) {
  compile();
  const Outcome both = cubby({"-sz"});
  ASSERT_EQ(both.exit_code, 0) << both.err;
  const std::size_t shown = both.out.find("compiles");
  const std::size_t zeroed = both.out.find("counters zeroed");
  ASSERT_NE(shown, std::string::npos) << both.out;
  ASSERT_NE(zeroed, std::string::npos) << both.out;
  EXPECT_LT(shown, zeroed) << both.out;  // in order: shown, then zeroed
  EXPECT_EQ(stats_row(both.out, "compiles"), "1") << both.out;
  EXPECT_EQ(parse(cubby({"stats", "--json"}))["compiles"], 0);

  const Outcome with_value = cubby({"-sM1G"});  // a value option ends the bundle
  ASSERT_EQ(with_value.exit_code, 0) << with_value.err;
  EXPECT_EQ(parse(cubby({"stats", "--json"}))["max_size"], 1'000'000'000u);
  const Outcome separate = cubby({"-s", "-z"});  // separate ones run in order too
  ASSERT_EQ(separate.exit_code, 0) << separate.err;
  EXPECT_LT(separate.out.find("compiles"), separate.out.find("counters zeroed")) << separate.out;
}

TEST_F(CcacheCliTest, AnUnknownOptionIsNamed) {
  for (const std::string option : {"-x", "--bogus", "-xs"}) {
    const Outcome run = cubby({option});
    EXPECT_EQ(run.exit_code, 2) << option;
    EXPECT_NE(run.err.find("unknown option '" + option + "'"), std::string::npos) << run.err;
    EXPECT_EQ(run.err.find("no command given"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("-s, -z, -C, -p, -M"), std::string::npos) << run.err;
  }
  const Outcome bundled = cubby({"-sx"});
  EXPECT_EQ(bundled.exit_code, 2);
  EXPECT_NE(bundled.err.find("unknown option -x"), std::string::npos) << bundled.err;
  EXPECT_EQ(bundled.out, "");  // refused before anything ran
  EXPECT_EQ(cubby({"--dir", store_.string(), "--json", "-s"}).exit_code, 0);  // the tool's own
}

TEST_F(CcacheCliTest, ZeroStatsSaysOneLine) {
  compile();
  const Outcome zero = cubby({"-z"});
  ASSERT_EQ(zero.exit_code, 0) << zero.err;
  EXPECT_EQ(std::count(zero.out.begin(), zero.out.end(), '\n'), 1) << zero.out;
  EXPECT_TRUE(zero.out.starts_with("counters zeroed (entries kept); counting since ")) << zero.out;
  EXPECT_EQ(parse(cubby({"stats", "--json"}))["compiles"], 0);
}

TEST_F(CcacheCliTest, StatsShowsTheRemoteRowsOnlyWithARemote) {
  compile();
  const Outcome local = cubby({"-s"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  EXPECT_EQ(stats_row(local.out, "hits (remote)"), "") << local.out;
  EXPECT_EQ(local.out.find("\nremote "), std::string::npos) << local.out;  // no remote_* row
  EXPECT_NE(local.out.find("hits (disk)"), std::string::npos) << local.out;
  const Outcome remote = cubby({"-s"}, {"CUBBY_REMOTE=redis://127.0.0.1:9"});
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  for (const char* row : {"hits (remote)", "remote misses", "remote errors", "remote writes"}) {
    EXPECT_NE(stats_row(remote.out, row), "") << row << ": " << remote.out;
  }
}

TEST_F(CcacheCliTest, ARejectedNvrtcOptionNamesTheUsersFile) {
  const Outcome run =
      cubby({"compile", kernel_.string(), "--arch", "sm_90", "--option=--no-such-nvrtc-option"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("option of " + kernel_.string()), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("cubby_program.cu"), std::string::npos) << run.err;
}

TEST_F(CcacheCliTest, AStorePathUnderARegularFileNamesTheFile) {
  const fs::path file = root_ / "afile";
  write_text(file, "mine\n");
  const fs::path under = file / "sub";
  const Outcome run = cubby(
      {"compile", kernel_.string(), "--arch", "sm_90", "--json", "--name-expr", "ns::k<float, 1>"},
      {}, under);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find(under.string() + " (CUBBY_DIR or --dir) cannot be made: " + file.string() +
                         " is a file, not a folder"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.err.find("cubby.conf"), std::string::npos) << run.err;
  EXPECT_EQ(cli_json(run)["tier"], "compiled");
  EXPECT_EQ(read_text(file), "mine\n");
  const Outcome stats = cubby({"stats"}, {}, under);
  EXPECT_EQ(stats.err.find("cubby.conf"), std::string::npos) << stats.err;
  EXPECT_NE(stats.err.find(file.string() + " is a file"), std::string::npos) << stats.err;
}

}  // namespace
