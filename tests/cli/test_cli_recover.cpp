// Tests for cli/recover.cpp: `cubby recover CUBIN [--name-expr E]... [--json]`, run as a process
// on a CUBIN written by `cubby compile --cubin-out`.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_process.hpp"
#include "cubby/entry.hpp"
#include "storage/local/disk.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using nlohmann::json;

constexpr const char* kKernel = R"(
namespace ns {
enum class Tag { A, B };
typedef float real_t;
template <class T, int N> __global__ void scale(T* p) { p[threadIdx.x % N] *= T(2); }
template <Tag t> __global__ void tagged(int* p) { p[0] = static_cast<int>(t); }
template <class T> __device__ T table[4];
}
)";

using Outcome = testing::CliOutcome;

class RecoverCli : public ::testing::Test {
 protected:
  testing::TempDir dir_{"recover-cli"};

  Outcome cubby(const std::vector<std::string>& args) {
    return testing::run_cli(args, dir_ / "store", {dir_ / "stdout.txt", dir_ / "stderr.txt"});
  }

  // Compiles the kernel through `cubby compile` and returns the CUBIN's path and lowered names.
  std::pair<std::string, json> compile() {
    testing::write_text(dir_ / "k.cu", kKernel);
    const std::string cubin = (dir_ / "k.cubin").string();
    const Outcome run =
        cubby({"compile", (dir_ / "k.cu").string(), "--json", "--arch", "sm_90", "--name-expr",
               "ns::scale<float, 256>", "--name-expr", "ns::scale<double, 64>", "--name-expr",
               "ns::tagged<ns::Tag::B>", "--name-expr", "&ns::table<int>", "--cubin-out", cubin});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return {cubin, testing::cli_json(run)};
  }
};

TEST_F(RecoverCli, JsonGivesEachExpressionAndEverySymbol) {
  const auto [cubin, compiled] = compile();
  ASSERT_TRUE(compiled.contains("lowered_names")) << compiled.dump();
  const Outcome run =
      cubby({"recover", cubin, "--json", "--name-expr", "ns::scale<float,256>", "--name-expr",
             "&ns::table<int>", "--name-expr", "ns::tagged<ns::Tag::B>", "--name-expr",
             "ns::scale<ns::real_t, 256>", "--name-expr", "ns::scale<float"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json out = testing::cli_json(run);
  ASSERT_FALSE(out.is_discarded()) << run.out;
  const auto& lowered = compiled["lowered_names"];
  ASSERT_EQ(out["names"].size(), 5u);
  EXPECT_EQ(out["names"][0]["mangled"], lowered["ns::scale<float, 256>"]);
  EXPECT_EQ(out["names"][0]["kind"], "kernel");
  EXPECT_EQ(out["names"][1]["mangled"], lowered["&ns::table<int>"]);
  EXPECT_EQ(out["names"][1]["kind"], "variable");
  EXPECT_EQ(out["names"][2]["mangled"], lowered["ns::tagged<ns::Tag::B>"]);
  EXPECT_FALSE(out["names"][3]["resolved"].get<bool>());
  EXPECT_NE(out["names"][3]["reason"].get<std::string>().find("ns::real_t"), std::string::npos);
  EXPECT_FALSE(out["names"][4]["resolved"].get<bool>());
  EXPECT_EQ(out["resolved"], 3);
  EXPECT_EQ(out["unresolved"], 2);
  EXPECT_EQ(out["kernels"].size(), 3u);
  bool table = false;
  for (const auto& variable : out["variables"]) {
    table = table || (variable["demangled"] == "ns::table<int>" && variable["bytes"] == 16);
  }
  EXPECT_TRUE(table) << out["variables"].dump();
}

TEST_F(RecoverCli, TextNamesTheReasonAndStrictFails) {
  const auto [cubin, compiled] = compile();
  const Outcome run = cubby({"recover", cubin, "--name-expr", "ns::scale<ns::real_t, 256>"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("unresolved, because"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("kernels (3)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("void ns::scale<double, 64>(double*)"), std::string::npos) << run.out;
  const Outcome strict =
      cubby({"recover", cubin, "--strict", "--name-expr", "ns::scale<ns::real_t, 256>"});
  EXPECT_EQ(strict.exit_code, 1);
}

// An entry whose checksum is valid and whose stored name is a real kernel of its CUBIN, but the
// kernel of another expression: the symbol check passes, `cubby verify`'s name check must not.
TEST_F(RecoverCli, VerifyReportsAndFixesANameMapPointingAtAnotherKernel) {
  const auto [cubin, compiled] = compile();
  ASSERT_EQ(cubby({"verify", "--json"}).exit_code, 0);
  DiskTier disk(dir_ / "store");
  std::vector<DiskEntryInfo> entries;
  ASSERT_TRUE(disk.list([&](const DiskEntryInfo& info) { entries.push_back(info); }).ok());
  ASSERT_EQ(entries.size(), 1u);
  auto entry = decode_entry(testing::read_text(entries[0].path), entries[0].key);
  ASSERT_TRUE(entry.ok()) << entry.error().message;
  std::string& f = entry->lowered_names.at("ns::scale<float, 256>");
  const std::string d = entry->lowered_names.at("ns::scale<double, 64>");
  ASSERT_NE(f, d);
  f = d;  // now points at scale<double, 64>, a kernel of the same CUBIN
  testing::write_text(entries[0].path, encode_entry(entries[0].key, *entry));

  const Outcome found = cubby({"verify", "--json"});
  EXPECT_EQ(found.exit_code, 1) << found.out << found.err;
  const json report = testing::cli_json(found);
  ASSERT_FALSE(report.is_discarded()) << found.out;
  EXPECT_EQ(report["bad"], 1);
  ASSERT_EQ(report["problems"].size(), 1u);
  const std::string problem = report["problems"][0]["problem"].get<std::string>();
  EXPECT_NE(problem.find("ns::scale<float, 256>"), std::string::npos) << problem;
  EXPECT_NE(problem.find(compiled["lowered_names"]["ns::scale<float, 256>"].get<std::string>()),
            std::string::npos)
      << problem;  // names the symbol enumeration resolves the expression to
  EXPECT_TRUE(std::filesystem::exists(entries[0].path));

  const Outcome fixed = cubby({"verify", "--fix", "--json"});
  EXPECT_EQ(fixed.exit_code, 0) << fixed.out << fixed.err;
  EXPECT_EQ(testing::cli_json(fixed)["removed"], 1);
  EXPECT_FALSE(std::filesystem::exists(entries[0].path));
}

TEST_F(RecoverCli, BadInputIsAClearFailure) {
  testing::write_text(dir_ / "not.cubin", "this is not an ELF file");
  const Outcome not_elf = cubby({"recover", (dir_ / "not.cubin").string(), "--name-expr", "k"});
  EXPECT_EQ(not_elf.exit_code, 1);
  EXPECT_NE(not_elf.err.find("is not a readable CUBIN"), std::string::npos) << not_elf.err;
  const Outcome missing = cubby({"recover", (dir_ / "missing.cubin").string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  const Outcome bad_demangler =
      cubby({"recover", (dir_ / "not.cubin").string(), "--demangler", "nope"});
  EXPECT_EQ(bad_demangler.exit_code, 2);
}

}  // namespace
}  // namespace cubby
