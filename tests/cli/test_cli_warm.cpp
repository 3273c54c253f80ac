// `cubby warm`: recorded recipes compiled in worker processes, and every way one can go wrong.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_process.hpp"
#include "cubby/cache.hpp"
#include "small_tmpfs.hpp"
#include "storage/local/manifests.hpp"
#include "test_support.hpp"
#include "util/bytes.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using testing::cli_json;
using testing::CliOutcome;
using testing::TempDir;
using testing::write_text;

constexpr const char* kSuite = "warm suite";

// Program `tag`: a tiny kernel; with a header, it includes <tag>.cuh from the include folder.
CompileRequest program(const std::string& tag, const fs::path& include_dir = {}) {
  CompileRequest r;
  r.source = (include_dir.empty() ? "" : "#include \"" + tag + ".cuh\"\n") + "__global__ void k_" +
             tag + "(int* p) { *p = 1; }\n";
  r.program_name = tag + ".cu";
  r.name_expressions = {"k_" + tag};
  if (!include_dir.empty()) r.options = {"-I" + include_dir.string()};
  r.arch = "sm_90";
  return r;
}

class Warm : public ::testing::Test {
 protected:
  // Records p0..p3 (p3 reads include/p3.cuh) as suite kSuite, then empties the store's entries:
  // what a toolchain upgrade does to the keys.
  void SetUp() override {
    fs::create_directories(include_);
    write_text(include_ / "p3.cuh", "constexpr int kP3 = 3;\n");
    Config config;
    config.dir = store_;
    config.suite = kSuite;
    {
      Cache cache(config);
      for (const CompileRequest& request : requests()) (void)cache.compile(request);
    }
    fs::remove_all(store_ / "entries");
  }

  std::vector<CompileRequest> requests() const {
    return {program("p0"), program("p1"), program("p2"), program("p3", include_)};
  }

  CliOutcome warm(std::vector<std::string> args, const std::vector<std::string>& env = {}) {
    args.insert(args.begin(), "warm");
    const testing::CliOutputFiles files{dir_ / "out", dir_ / "err"};
    return testing::finish_cli(testing::start_cli(args, store_, files, env), files);
  }

  TempDir dir_{"cli-warm"};
  fs::path store_ = dir_ / "store";
  fs::path include_ = dir_ / "include";
};

TEST_F(Warm, CompilesEveryMissingRecipeThenFindsThemWarm) {
  const CliOutcome first = warm({"--suite", kSuite, "-j", "2", "--json"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto summary = cli_json(first);
  EXPECT_EQ(summary["recipes"], 4);
  EXPECT_EQ(summary["compiled"], 4);
  EXPECT_EQ(summary["warm"], 0);
  EXPECT_TRUE(summary["failed"].empty()) << summary.dump();
  EXPECT_EQ(summary["stopped"], "");
  EXPECT_EQ(summary["worker_pch"], "eager");  // two programs a worker: the PCH pays
  Config config;
  config.dir = store_;
  Cache cache(config);
  for (const CompileRequest& request : requests()) {
    EXPECT_EQ(cache.compile(request).tier, Source::disk) << request.program_name;
  }
  const auto again = cli_json(warm({"--json"}));  // every suite of the store
  EXPECT_EQ(again["warm"], 4);
  EXPECT_EQ(again["compiled"], 0);
  EXPECT_EQ(again["suites"], nlohmann::json::array({kSuite}));
}

TEST_F(Warm, ADeletedHeaderIsSkippedAndASourceThatNoLongerCompilesFailsWhileTheRestCompile) {
  fs::remove(include_ / "p3.cuh");
  // p1's recipe, edited in the manifest into a program that no longer compiles.
  auto manifest = load_manifest(store_, kSuite);
  ASSERT_TRUE(manifest && *manifest);
  (*manifest)->recipes[1].source = "__global__ void k_p1(int* p) { *p = undeclared; }\n";
  ASSERT_TRUE(save_manifest(store_, **manifest));
  const CliOutcome run = warm({"--suite", kSuite, "--json"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const auto summary = cli_json(run);
  EXPECT_EQ(summary["compiled"], 2);
  ASSERT_EQ(summary["skipped"].size(), 1U);
  EXPECT_EQ(summary["skipped"][0]["program"], "p3.cu");
  EXPECT_NE(summary["skipped"][0]["reason"].get<std::string>().find("no longer exists"),
            std::string::npos);
  ASSERT_EQ(summary["failed"].size(), 1U);
  EXPECT_EQ(summary["failed"][0]["program"], "p1.cu");
  EXPECT_NE(summary["failed"][0]["error"].get<std::string>().find("undeclared"), std::string::npos);
  const CliOutcome text = warm({"--suite", kSuite});
  EXPECT_NE(text.out.find("skipped   p3.cu"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("failed    p1.cu"), std::string::npos) << text.out;
}

// A recipe can come from anyone who writes the manifests (a shared store's group, the remote, an
// imported archive): options that write or read files of their own are refused by name.
TEST_F(Warm, ARecipesOptionsThatWriteFilesAreRefusedAndNothingIsWritten) {
  const fs::path victim = dir_ / "victim";
  write_text(victim, "the victim's contents\n");
  auto manifest = load_manifest(store_, kSuite);
  ASSERT_TRUE(manifest && *manifest);
  auto& recipes = (*manifest)->recipes;
  recipes[0].options = {"--create-pch=" + victim.string()};
  recipes[1].options = {"--time=" + (dir_ / "times.csv").string()};
  recipes[2].options = {"-Xcudafe", "--error_output=" + (dir_ / "errors.txt").string()};
  ASSERT_TRUE(save_manifest(store_, **manifest));
  const CliOutcome run = warm({"--suite", kSuite, "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto summary = cli_json(run);
  EXPECT_EQ(summary["compiled"], 1);  // p3
  ASSERT_EQ(summary["failed"].size(), 3U) << summary.dump();
  for (const auto& failed : summary["failed"]) {
    const std::string program = failed["program"];
    const std::string error = failed["error"];
    const std::string option = program == "p0.cu"   ? "--create-pch="
                               : program == "p1.cu" ? "--time="
                                                    : "-Xcudafe --error_output=";
    EXPECT_NE(error.find("'" + option), std::string::npos) << program << ": " << error;
  }
  EXPECT_EQ(testing::read_text(victim), "the victim's contents\n");
  EXPECT_FALSE(fs::exists(dir_ / "times.csv"));
  EXPECT_FALSE(fs::exists(dir_ / "errors.txt"));
}

// `#include "/etc/passwd"` in a recipe: the error says the program failed, never the file's lines.
TEST_F(Warm, TheLinesOfAFileOutsideTheRecipeNeverShowInItsError) {
  const fs::path secret = dir_ / "secret.txt";
  write_text(secret, "s3cret-first: line one\ns3cret-second = line two;\n");
  auto manifest = load_manifest(store_, kSuite);
  ASSERT_TRUE(manifest && *manifest);
  (*manifest)->recipes[1].source =
      "#include \"" + secret.string() + "\"\n__global__ void k_p1(int* p) { *p = undeclared; }\n";
  ASSERT_TRUE(save_manifest(store_, **manifest));
  for (const bool json : {true, false}) {
    const CliOutcome run = warm(json ? std::vector<std::string>{"--suite", kSuite, "--json"}
                                     : std::vector<std::string>{"--suite", kSuite});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.out.find("s3cret"), std::string::npos) << run.out;
    EXPECT_EQ(run.err.find("s3cret"), std::string::npos) << run.err;
    if (!json) continue;
    const auto summary = cli_json(run);
    ASSERT_EQ(summary["failed"].size(), 1U) << summary.dump();
    const std::string error = summary["failed"][0]["error"];
    EXPECT_NE(error.find("NVRTC could not compile p1.cu"), std::string::npos) << error;
    EXPECT_NE(error.find("undeclared"), std::string::npos) << error;  // its own line shows
    EXPECT_NE(error.find("located outside the recipe's source are not shown"), std::string::npos)
        << error;
  }
}

// What a worker prints on stdout (NVRTC's `--time=/dev/stdout`, anything) is never a reply.
TEST_F(Warm, WhatAWorkerPrintsOnStdoutIsNotTakenForItsReply) {
  const CliOutcome run =
      warm({"--suite", kSuite, "-j", "1", "--json"}, {"CUBBY_TEST_WORKER_FAULT=stdout:p0.cu"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto summary = cli_json(run);
  EXPECT_EQ(summary["compiled"], 4) << summary.dump();
  EXPECT_TRUE(summary["failed"].empty()) << summary.dump();
  EXPECT_NE(run.err.find("forged on stdout"), std::string::npos) << run.err;
}

TEST_F(Warm, AWorkerThatCrashesFailsOnlyItsRecipe) {
  const CliOutcome run =
      warm({"--suite", kSuite, "-j", "2", "--json"}, {"CUBBY_TEST_WORKER_FAULT=crash:p1.cu"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const auto summary = cli_json(run);
  EXPECT_EQ(summary["compiled"], 3);
  ASSERT_EQ(summary["failed"].size(), 1U);
  EXPECT_EQ(summary["failed"][0]["program"], "p1.cu");
  EXPECT_NE(summary["failed"][0]["error"].get<std::string>().find("killed by signal"),
            std::string::npos)
      << summary.dump();
}

TEST_F(Warm, AWorkerThatHangsIsKilledAtTheTimeoutAndTheRestCompile) {
  const auto start = std::chrono::steady_clock::now();
  const CliOutcome run = warm({"--suite", kSuite, "-j", "1", "--timeout", "2", "--json"},
                              {"CUBBY_TEST_WORKER_FAULT=hang:p0.cu"});
  const auto seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const auto summary = cli_json(run);
  EXPECT_EQ(summary["compiled"], 3);  // a new worker took the hung one's place
  ASSERT_EQ(summary["failed"].size(), 1U);
  EXPECT_NE(summary["failed"][0]["error"].get<std::string>().find("timed out after 2 s"),
            std::string::npos);
  EXPECT_LT(seconds, 60.0);  // bounded by the timeout, not by the hang
}

TEST_F(Warm, WorkersThatCompileOneProgramEachGoWithoutPch) {
  auto manifest = load_manifest(store_, kSuite);
  ASSERT_TRUE(manifest && *manifest);
  (*manifest)->recipes.resize(2);
  ASSERT_TRUE(save_manifest(store_, **manifest));
  const auto one_each = cli_json(warm({"--suite", kSuite, "-j", "2", "--json"}));
  if (one_each["jobs"] != 2) GTEST_SKIP() << "a single core: " << one_each.dump();
  EXPECT_EQ(one_each["worker_pch"], "off");
  EXPECT_EQ(one_each["compiled"], 2);
  fs::remove_all(store_ / "entries");
  const auto off = cli_json(warm({"--suite", kSuite, "-j", "1", "--json"}, {"CUBBY_PCH=0"}));
  EXPECT_EQ(off["worker_pch"], "off");  // the user's CUBBY_PCH=0 holds
  EXPECT_EQ(off["compiled"], 2);
}

// A manifest recorded in one checkout (CUBBY_BASE_DIR) warms another checkout of the project.
TEST_F(Warm, RecipesRecordedUnderABaseFolderWarmAnotherCheckout) {
  const fs::path first = dir_ / "checkout-a";
  const fs::path second = dir_ / "checkout-b";
  for (const fs::path& checkout : {first, second}) {
    fs::create_directories(checkout / "include");
    write_text(checkout / "include" / "p7.cuh", "constexpr int kP7 = 7;\n");
  }
  Config config;
  config.dir = store_;
  config.suite = "checkouts";
  config.base_dir = first;
  {
    Cache cache(config);
    (void)cache.compile(program("p7", first / "include"));
  }
  fs::remove_all(first);
  fs::remove_all(store_ / "entries");
  const CliOutcome unset = warm({"--suite", "checkouts", "--json"});
  const auto skipped = cli_json(unset);
  ASSERT_EQ(skipped["skipped"].size(), 1U) << skipped.dump();
  EXPECT_NE(skipped["skipped"][0]["reason"].get<std::string>().find("set CUBBY_BASE_DIR"),
            std::string::npos);
  const auto warmed =
      cli_json(warm({"--suite", "checkouts", "--json"}, {"CUBBY_BASE_DIR=" + second.string()}));
  EXPECT_EQ(warmed["compiled"], 1) << warmed.dump();
  config.base_dir = second;
  Cache cache(config);
  EXPECT_TRUE(cache.compile(program("p7", second / "include")).hit);
}

// A member of a group-shared store writes a suite's manifest whose recipe stringizes a file only
// you can read (through a link she points at it). `cubby warm` (and the prefetch) replayed it as
// you, and the entry, group-readable, carried the file's bytes to her. A manifest another user may
// have written (owned by another user, or writable by the group) is never replayed, unless the
// person running cubby names its owner in CUBBY_TRUSTED_OWNERS; nor are its recipes merged into a
// manifest of yours when your run records the suite.
TEST_F(Warm, AManifestAnotherUserMayHaveWrittenIsNeverReplayed) {
  const fs::path path = manifest_path(store_, kSuite);
  struct stat own {};
  ASSERT_EQ(::stat(path.c_str(), &own), 0);
  EXPECT_EQ(own.st_mode & 07777, 0644u) << "a manifest must be writable by its owner only";
  if (const std::string why = testing::give_to_another_user(path); !why.empty())
    GTEST_SKIP() << why;
  struct stat given {};
  ASSERT_EQ(::stat(path.c_str(), &given), 0);
  const CliOutcome refused = warm({"--suite", kSuite, "--json"});
  EXPECT_EQ(refused.exit_code, 0) << refused.err;
  const auto summary = cli_json(refused);
  EXPECT_EQ(summary["recipes"], 0);
  EXPECT_EQ(summary["compiled"], 0);
  EXPECT_EQ(summary["untrusted_suites"], nlohmann::json::array({kSuite}));
  EXPECT_NE(refused.err.find("are not replayed: " + path.string() + " is owned by"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("CUBBY_TRUSTED_OWNERS"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(store_ / "entries")) << "an untrusted recipe was compiled";
  // Its owner named by the person running cubby: replayed.
  const auto trusted =
      cli_json(warm({"--suite", kSuite, "--json"},
                    {"CUBBY_TRUSTED_OWNERS=other, " + std::to_string(given.st_uid)}));
  EXPECT_EQ(trusted["compiled"], 4) << trusted.dump();
  fs::remove_all(store_ / "entries");
  // Your run of the suite records your recipes only: hers are not merged into your file.
  {
    Config config;
    config.dir = store_;
    config.suite = kSuite;
    Cache cache(config);
    (void)cache.compile(program("p0"));
  }
  ASSERT_EQ(::stat(path.c_str(), &own), 0);
  EXPECT_EQ(own.st_uid, ::geteuid());
  const auto mine = cli_json(warm({"--suite", kSuite, "--json"}));
  EXPECT_EQ(mine["recipes"], 1) << mine.dump();
  EXPECT_EQ(mine["warm"], 1);  // p0, which that run stored
  // A file of yours that the group may write is another user's as much.
  ASSERT_EQ(::chmod(path.c_str(), 0664), 0);
  const auto writable = cli_json(warm({"--suite", kSuite, "--json"}));
  EXPECT_EQ(writable["untrusted_suites"], nlohmann::json::array({kSuite}));
  EXPECT_EQ(writable["recipes"], 0);
}

TEST_F(Warm, ACorruptOrNewerManifestIsIgnoredWithAMessage) {
  const fs::path path = manifest_path(store_, kSuite);
  std::string bytes = testing::read_text(path);
  store_le(bytes.data() + 8, std::uint32_t{99});
  write_text(path, bytes);
  const CliOutcome newer = warm({"--suite", kSuite, "--json"});
  EXPECT_EQ(newer.exit_code, 0);
  EXPECT_NE(newer.err.find("newer cubby"), std::string::npos) << newer.err;
  EXPECT_EQ(cli_json(newer)["recipes"], 0);
  write_text(path, "CUBBYMAN, then damaged bytes");
  const CliOutcome damaged = warm({"--json"});  // found by listing the store's suites
  EXPECT_EQ(damaged.exit_code, 0);
  EXPECT_NE(damaged.err.find("ignored"), std::string::npos) << damaged.err;
  EXPECT_NE(damaged.err.find(path.string()), std::string::npos) << damaged.err;
}

TEST_F(Warm, AReadOnlyOrDisabledStoreAndAnUnknownSuiteSayWhatToDo) {
  const CliOutcome read_only = warm({"--suite", kSuite}, {"CUBBY_READ_ONLY=1"});
  EXPECT_EQ(read_only.exit_code, 2);
  EXPECT_NE(read_only.err.find("CUBBY_READ_ONLY"), std::string::npos) << read_only.err;
  const CliOutcome disabled = warm({"--suite", kSuite}, {"CUBBY_DISABLE=1"});
  EXPECT_EQ(disabled.exit_code, 2);
  // Prefetch (the harness's, cubby_add_gtest's fixture) is best effort: no failure, no output.
  const CliOutcome prefetch = warm({"--suite", kSuite, "--prefetch"}, {"CUBBY_READ_ONLY=1"});
  EXPECT_EQ(prefetch.exit_code, 0);
  EXPECT_EQ(prefetch.err, "");
  const CliOutcome unknown = warm({"--suite", "never ran", "--json"});
  EXPECT_EQ(unknown.exit_code, 1);  // a suite named but never recorded (issue 27)
  EXPECT_NE(unknown.err.find("no recipes are recorded for suite 'never ran'"), std::string::npos)
      << unknown.err;
  EXPECT_EQ(cli_json(unknown)["recipes"], 0);
}

TEST_F(Warm, AFullDiskStopsWarmingWithExitStatusOne) {
  TempDir outer("cli-warm-full");
  testing::SmallTmpfs tmpfs(outer / "fs", "size=256k");
  if (!tmpfs.mounted()) GTEST_SKIP() << tmpfs.why_not();
  fs::create_directories(tmpfs.path() / "store");
  fs::copy(store_ / "manifests", tmpfs.path() / "store" / "manifests");
  {
    std::string filler(4096, 'f');  // fill the file system
    FILE* file = std::fopen((tmpfs.path() / "filler").c_str(), "wb");
    ASSERT_NE(file, nullptr);
    while (std::fwrite(filler.data(), 1, filler.size(), file) == filler.size()) {
    }
    std::fclose(file);
  }
  store_ = tmpfs.path() / "store";
  const CliOutcome run = warm({"--suite", kSuite, "-j", "1", "--json"}, {"CUBBY_PCH=0"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  const auto summary = cli_json(run);
  EXPECT_NE(summary["stopped"].get<std::string>().find("could not be written"), std::string::npos);
  EXPECT_LT(summary["compiled"].get<int>(), 4);  // it stopped rather than compile in vain
}

TEST(WarmCli, HelpNamesTheCommand) {
  TempDir dir("cli-warm-help");
  const testing::CliOutputFiles files{dir / "out", dir / "err"};
  const CliOutcome run = testing::run_cli({"warm", "--help"}, dir / "store", files);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("--jobs"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("--worker"), std::string::npos) << "internal options are hidden";
}

}  // namespace
}  // namespace cubby
