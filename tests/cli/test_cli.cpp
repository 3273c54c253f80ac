// Tests of the `cubby` command-line tool (cli/main.cpp): runs the built binary in child processes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_process.hpp"
#include "cubby/cache.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kKernel = R"(
namespace ns {
template <typename T, int N>
__global__ void scale(T* data, T factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) data[i] *= factor;
}
}  // namespace ns
)";

constexpr const char* kBrokenKernel = R"(
__global__ void broken(float* data) { data[0] = undeclared_symbol; }
)";

using Outcome = cubby::testing::CliOutcome;

using cubby::testing::cli_json;
using cubby::testing::read_text;
using cubby::testing::write_text;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    root_ = fs::temp_directory_path() /
            ("cubby_test_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(root_);
    fs::create_directories(root_);
    store_ = root_ / "store";
    kernel_ = root_ / "scale.cu";
    write_text(kernel_, kKernel);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // Runs `cubby args...` with CUBBY_DIR set to the test's store; stdout and stderr captured.
  Outcome cubby(const std::vector<std::string>& args) {
    return cubby::testing::run_cli(args, store_, {root_ / "stdout.txt", root_ / "stderr.txt"});
  }

  // `cubby compile --json` of the test kernel with two name expressions.
  Outcome compile_kernel(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"compile",
                                  kernel_.string(),
                                  "--json",
                                  "--arch",
                                  "sm_90",
                                  "--name-expr",
                                  "ns::scale<float, 256>",
                                  "--name-expr",
                                  "ns::scale<double, 64>",
                                  "--option",
                                  "-std=c++17"};
    args.insert(args.end(), extra.begin(), extra.end());
    return cubby(args);
  }

  // No message may leak a C++ exception type or an uncaught-exception abort.
  static void expect_clean_message(const std::string& err) {
    EXPECT_EQ(err.find("std::"), std::string::npos) << err;
    EXPECT_EQ(err.find("terminate"), std::string::npos) << err;
    EXPECT_EQ(err.find("what()"), std::string::npos) << err;
  }

  fs::path root_;
  fs::path store_;
  fs::path kernel_;
};

TEST_F(CliTest, CompileTwiceInTwoProcessesHitsDisk) {
  const Outcome first = compile_kernel();
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const json cold = cli_json(first);
  EXPECT_EQ(cold["hit"], false);
  EXPECT_EQ(cold["tier"], "compiled");
  EXPECT_EQ(cold["payload_kind"], "cubin");
  EXPECT_GT(cold["cubin_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_GT(cold["compile_ms"].get<double>(), 0.0);
  EXPECT_TRUE(cold["elapsed_ms"].is_number());
  EXPECT_TRUE(cold["log"].is_string());
  ASSERT_EQ(cold["key"].get<std::string>().size(), 32u);
  ASSERT_TRUE(cold["lowered_names"].is_object());
  EXPECT_EQ(cold["lowered_names"].size(), 2u);
  EXPECT_EQ(cold["lowered_names"]["ns::scale<float, 256>"], "_ZN2ns5scaleIfLi256EEEvPT_S1_");

  const Outcome second = compile_kernel();
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const json warm = cli_json(second);
  EXPECT_EQ(warm["hit"], true);
  EXPECT_EQ(warm["tier"], "disk");
  EXPECT_EQ(warm["key"], cold["key"]);
  EXPECT_EQ(warm["lowered_names"], cold["lowered_names"]);
  EXPECT_EQ(warm["cubin_bytes"], cold["cubin_bytes"]);
  EXPECT_EQ(warm["compile_ms"], cold["compile_ms"]);
}

TEST_F(CliTest, HumanCompileOutputNamesKeyAndLoweredNames) {
  const Outcome run = cubby(
      {"compile", kernel_.string(), "--arch", "sm_90", "--name-expr", "ns::scale<float, 256>"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("compiled"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("ns::scale<float, 256> -> _ZN2ns5scaleIfLi256EEEvPT_S1_"),
            std::string::npos)
      << run.out;
  const Outcome again = cubby(
      {"compile", kernel_.string(), "--arch", "sm_90", "--name-expr", "ns::scale<float, 256>"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("hit (disk)"), std::string::npos) << again.out;
}

TEST_F(CliTest, CompileErrorExitsOneWithLogAndStoresNothing) {
  const fs::path broken = root_ / "broken.cu";
  write_text(broken, kBrokenKernel);
  const Outcome run = cubby({"compile", broken.string(), "--json", "--arch", "sm_90"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("undeclared_symbol"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("broken.cu"), std::string::npos) << run.err;
  expect_clean_message(run.err);
  // Issue 27 item 4: NVRTC's log names the user's file, not the default program name (which stays
  // in the key), and --json prints an error object.
  EXPECT_EQ(run.err.find(cubby::CompileRequest{}.program_name), std::string::npos) << run.err;
  const json error = cli_json(run);
  EXPECT_EQ(error["error"], "compile_failed");
  EXPECT_EQ(error["file"], broken.string());
  EXPECT_EQ(error["program_name"], cubby::CompileRequest{}.program_name);
  EXPECT_NE(error["log"].get<std::string>().find(broken.string() + "("), std::string::npos)
      << error["log"];
  EXPECT_NE(error["log"].get<std::string>().find("undeclared_symbol"), std::string::npos);

  const Outcome ls = cubby({"ls", "--json"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  const json rows = cli_json(ls);
  ASSERT_TRUE(rows.is_array());
  EXPECT_TRUE(rows.empty());
}

TEST_F(CliTest, MissingFileIsAUsageError) {
  const std::string missing = (root_ / "nope.cu").string();
  const Outcome run = cubby({"compile", missing, "--json"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find(missing), std::string::npos) << run.err;
  EXPECT_TRUE(run.out.empty());
  expect_clean_message(run.err);

  const Outcome folder = cubby({"compile", root_.string()});
  EXPECT_EQ(folder.exit_code, 2);
  expect_clean_message(folder.err);
}

TEST_F(CliTest, LsShowCubinOutStatsClear) {
  const fs::path compiled_cubin = root_ / "compiled.cubin";
  const Outcome compiled = compile_kernel({"--cubin-out", compiled_cubin.string()});
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  const json result = cli_json(compiled);
  const std::string key = result["key"];
  EXPECT_EQ(read_text(compiled_cubin)
                .rfind("\x7f"
                       "ELF",
                       0),
            0u);
  EXPECT_EQ(fs::file_size(compiled_cubin), result["cubin_bytes"].get<std::uint64_t>());

  const Outcome ls = cubby({"ls", "--json"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  const json rows = cli_json(ls);
  ASSERT_EQ(rows.size(), 1u) << ls.out;
  EXPECT_EQ(rows[0]["key"], key);
  EXPECT_EQ(rows[0]["status"], "ok");
  EXPECT_EQ(rows[0]["kind"], "cubin");
  EXPECT_EQ(rows[0]["names"], 2);
  EXPECT_GT(rows[0]["bytes"].get<std::uint64_t>(), result["cubin_bytes"].get<std::uint64_t>());

  const Outcome ls_human = cubby({"ls"});
  ASSERT_EQ(ls_human.exit_code, 0) << ls_human.err;
  EXPECT_NE(ls_human.out.find(key), std::string::npos) << ls_human.out;
  EXPECT_NE(ls_human.out.find("ns::scale<double, 64>, ns::scale<float, 256>"), std::string::npos)
      << ls_human.out;

  const fs::path shown_cubin = root_ / "shown.cubin";
  const Outcome show = cubby({"show", key, "--json", "--cubin-out", shown_cubin.string()});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const json shown = cli_json(show);
  EXPECT_EQ(shown["key"], key);
  EXPECT_EQ(shown["kind"], "cubin");
  EXPECT_EQ(shown["lowered_names"], result["lowered_names"]);
  ASSERT_TRUE(shown["options"].is_array());
  ASSERT_FALSE(shown["options"].empty());
  EXPECT_EQ(shown["options"][0], "-std=c++17");
  EXPECT_EQ(shown["compile_ms"], result["compile_ms"]);
  EXPECT_GT(shown["created_ms"].get<std::int64_t>(), 0);
  EXPECT_EQ(read_text(shown_cubin)
                .rfind("\x7f"
                       "ELF",
                       0),
            0u);
  EXPECT_EQ(read_text(shown_cubin), read_text(compiled_cubin));

  const Outcome show_human = cubby({"show", key});
  ASSERT_EQ(show_human.exit_code, 0) << show_human.err;
  EXPECT_NE(show_human.out.find("-std=c++17"), std::string::npos) << show_human.out;
  EXPECT_NE(show_human.out.find("_ZN2ns5scaleIdLi64EEEvPT_S1_"), std::string::npos)
      << show_human.out;

  const Outcome stats = cubby({"stats", "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  const json counted = cli_json(stats);
  EXPECT_EQ(counted["entries"], 1);
  EXPECT_EQ(counted["bytes"], rows[0]["bytes"]);
  EXPECT_EQ(counted["dir"], store_.string());

  const Outcome clear = cubby({"clear", "--json"});
  ASSERT_EQ(clear.exit_code, 0) << clear.err;
  EXPECT_EQ(cli_json(clear)["removed"], 1);
  EXPECT_TRUE(cli_json(cubby({"ls", "--json"})).empty());
  EXPECT_EQ(cli_json(cubby({"stats", "--json"}))["entries"], 0);

  const Outcome gone = cubby({"show", key});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_NE(gone.err.find("no entry " + key), std::string::npos) << gone.err;
  EXPECT_NE(gone.err.find("cubby ls"), std::string::npos) << gone.err;
}

TEST_F(CliTest, ShowRejectsMalformedKey) {
  const Outcome run = cubby({"show", "not-a-key"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("not-a-key"), std::string::npos) << run.err;
  expect_clean_message(run.err);
}

TEST_F(CliTest, CorruptEntryIsReportedNotACrash) {
  const Outcome compiled = compile_kernel();
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  const std::string key = cli_json(compiled)["key"];
  fs::path entry_path;
  for (const auto& item : fs::recursive_directory_iterator(store_)) {
    if (item.path().filename().string().rfind(key, 0) == 0) entry_path = item.path();
  }
  ASSERT_FALSE(entry_path.empty());
  std::string bytes = read_text(entry_path);
  ASSERT_GT(bytes.size(), 100u);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5a);
  write_text(entry_path, bytes);

  const Outcome show = cubby({"show", key});
  EXPECT_EQ(show.exit_code, 1);
  EXPECT_NE(show.err.find("corrupt"), std::string::npos) << show.err;
  EXPECT_NE(show.err.find("cubby verify --fix"), std::string::npos) << show.err;
  EXPECT_EQ(show.err.find("once available"), std::string::npos) << show.err;
  expect_clean_message(show.err);

  const Outcome ls = cubby({"ls", "--json"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  const json rows = cli_json(ls);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["status"], "corrupt");
  EXPECT_TRUE(rows[0]["error"].is_string());

  const Outcome ls_human = cubby({"ls"});
  EXPECT_EQ(ls_human.exit_code, 0);
  EXPECT_NE(ls_human.out.find("corrupt"), std::string::npos) << ls_human.out;
}

TEST_F(CliTest, EverySubcommandHasHelp) {
  for (const char* command : {"compile", "stats", "ls", "show", "clear"}) {
    const Outcome run = cubby({command, "--help"});
    EXPECT_EQ(run.exit_code, 0) << command << ": " << run.err;
    EXPECT_NE(run.out.find("--dir"), std::string::npos) << command << ": " << run.out;
    EXPECT_NE(run.out.find("--json"), std::string::npos) << command << ": " << run.out;
  }
  const Outcome top = cubby({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  for (const char* command : {"compile", "stats", "ls", "show", "clear"}) {
    EXPECT_NE(top.out.find(command), std::string::npos) << top.out;
  }
}

TEST_F(CliTest, VersionAndUsageErrors) {
  const Outcome version = cubby({"--version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_NE(version.out.find("cubby "), std::string::npos) << version.out;
  EXPECT_NE(version.out.find('.'), std::string::npos) << version.out;

  EXPECT_EQ(cubby({}).exit_code, 2);
  EXPECT_EQ(cubby({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(cubby({"ls", "--no-such-flag"}).exit_code, 2);
  EXPECT_EQ(cubby({"compile"}).exit_code, 2);
  EXPECT_EQ(cubby({"show"}).exit_code, 2);
  // Issue 27 item 2: CLI11's own errors too are one `cubby:` line with what to run.
  for (const std::vector<std::string>& args : {std::vector<std::string>{"ls", "--no-such-flag"},
                                               {"gc", "--max-size"},
                                               {"stats", "extra"},
                                               {"warm", "--timeout", "-1"}}) {
    const Outcome run = cubby(args);
    EXPECT_EQ(run.exit_code, 2) << args[0];
    EXPECT_TRUE(run.err.starts_with("cubby: ")) << run.err;
    EXPECT_NE(run.err.find("run `cubby " + args[0] + " --help`"), std::string::npos) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
  // An NVRTC option given as it is: the error says how --option takes it.
  const Outcome nvrtc = cubby({"compile", kernel_.string(), "-std=c++17"});
  EXPECT_EQ(nvrtc.exit_code, 2);
  EXPECT_NE(nvrtc.err.find("NVRTC options go through --option: `--option=-std=c++17`"),
            std::string::npos)
      << nvrtc.err;
}

// Issue 27 item 4: CUBBY_DIR naming a regular file says so and fails as safely as an unwritable
// store: the compile works, nothing is stored, the file is untouched.
TEST_F(CliTest, AStoreThatIsARegularFileIsSaidAndCompilesStillWork) {
  const fs::path file = root_ / "not-a-folder";
  write_text(file, "mine\n");
  const Outcome run = cubby({"compile", kernel_.string(), "--dir", file.string(), "--arch", "sm_90",
                             "--name-expr", "ns::scale<float, 256>", "--json"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find(file.string() + " (CUBBY_DIR or --dir) is a file, not a folder"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.err.find("cubby.conf"), std::string::npos) << run.err;
  EXPECT_EQ(cli_json(run)["tier"], "compiled");
  EXPECT_EQ(read_text(file), "mine\n");
}

TEST_F(CliTest, ExplainListsKeyFields) {
  const Outcome run = compile_kernel({"--explain"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json result = cli_json(run);
  ASSERT_TRUE(result["explain"].is_array());
  std::vector<std::string> labels;
  for (const auto& field : result["explain"]) {
    labels.push_back(field["label"]);
    EXPECT_EQ(field["hash"].get<std::string>().size(), 32u);
    EXPECT_TRUE(field["summary"].is_string());
  }
  for (const char* label : {"arch", "source"}) {
    EXPECT_NE(std::find(labels.begin(), labels.end(), label), labels.end()) << label;
  }

  const Outcome human = cubby({"compile", kernel_.string(), "--arch", "sm_90", "--explain"});
  ASSERT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find("arch"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("sm_90"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("source"), std::string::npos) << human.out;
}

TEST_F(CliTest, DirOptionOverridesCubbyDir) {
  const fs::path other = root_ / "other";
  const Outcome run = compile_kernel({"--dir", other.string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(cli_json(run)["tier"], "compiled");
  EXPECT_TRUE(cli_json(cubby({"ls", "--json"})).empty());
  EXPECT_EQ(cli_json(cubby({"ls", "--json", "--dir", other.string()})).size(), 1u);
}

// Bytes that are not UTF-8 in the store's path, the file and program name, an option and NVRTC's
// log (which quotes the program name): every --json output is still one valid JSON document, with
// U+FFFD in place of each such byte, and the command's work is reported as done.
TEST_F(CliTest, JsonOutputReplacesBytesThatAreNotUtf8) {
  const std::string replaced = "\xEF\xBF\xBD";  // U+FFFD
  const fs::path store = root_ / "store\xfe";
  const fs::path file = root_ / "\xff.cu";
  write_text(file, std::string(kKernel) + "__global__ void warn() { int unused; }\n");
  const auto run = [&](std::vector<std::string> args) {
    for (const char* arg : {"--json", "--dir"}) args.emplace_back(arg);
    args.push_back(store.string());
    return cubby(args);
  };
  const auto contains = [](const json& value, const std::string& part) {
    return value.is_string() && value.get<std::string>().find(part) != std::string::npos;
  };

  const Outcome compiled = run({"compile", file.string(), "--arch", "sm_90", "--option",
                                "-DTAG=\xff", "--program-name", "\xff.cu"});
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  const json result = cli_json(compiled);
  EXPECT_EQ(result["program_name"], replaced + ".cu");
  EXPECT_EQ(result["dir"], (root_ / "store").string() + replaced);
  EXPECT_TRUE(contains(result["log"], replaced + ".cu")) << result["log"];
  const std::string key = result["key"];
  ASSERT_EQ(key.size(), 32u);

  const Outcome shown = run({"show", key});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const json entry = cli_json(shown);
  EXPECT_TRUE(contains(entry["path"], "store" + replaced)) << entry["path"];
  const json& options = entry["options"];
  EXPECT_NE(std::find(options.begin(), options.end(), json("-DTAG=" + replaced)), options.end())
      << options;
  EXPECT_TRUE(contains(entry["log"], replaced + ".cu")) << entry["log"];

  for (const char* command : {"stats", "gc"}) {
    const Outcome listed = run({command});
    EXPECT_EQ(listed.exit_code, 0) << command << ": " << listed.err;
    EXPECT_EQ(cli_json(listed)["dir"], (root_ / "store").string() + replaced) << command;
  }
  const Outcome ls = run({"ls"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_EQ(cli_json(ls).size(), 1u);

  // A corrupt entry: verify names its path in "problems".
  fs::path entry_path;
  for (const auto& item : fs::recursive_directory_iterator(store)) {
    if (item.path().filename().string().rfind(key, 0) == 0) entry_path = item.path();
  }
  ASSERT_FALSE(entry_path.empty());
  std::string bytes = read_text(entry_path);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5a);
  write_text(entry_path, bytes);
  const Outcome verified = run({"verify"});
  EXPECT_EQ(verified.exit_code, 1) << verified.err;
  const json report = cli_json(verified);
  ASSERT_EQ(report["problems"].size(), 1u) << verified.out;
  EXPECT_TRUE(contains(report["problems"][0]["path"], "store" + replaced)) << verified.out;
  EXPECT_EQ(verified.err.find("internal error"), std::string::npos) << verified.err;

  const Outcome cleared = run({"clear"});
  EXPECT_EQ(cleared.exit_code, 0) << cleared.err;
  EXPECT_EQ(cli_json(cleared)["removed"], 1);
}

}  // namespace

// NVRTC looks up the source's quoted includes in the program name's folder first (the working
// folder, for the default program name: the file's name), then in the file's folder: the key
// must cover the header in both, so that editing either is never served stale.
TEST_F(CliTest, HeaderInTheWorkingFolderAndBesideTheSourceAreBothInTheKey) {
  write_text(root_ / "src" / "k.cu",
             "#include \"v.cuh\"\nextern \"C\" __global__ void k(int* p) { *p = V; }\n");
  write_text(root_ / "src" / "v.cuh", "constexpr int V = 1001;\n");
  write_text(root_ / "work" / "v.cuh", "constexpr int V = 2002;\n");
  const fs::path old_cwd = fs::current_path();
  fs::current_path(root_ / "work");
  // The PTX `cubby compile` gives, through the store or (CUBBY_DISABLE=1) straight from NVRTC.
  auto ptx = [&](bool disabled) {
    const fs::path out = root_ / (disabled ? "direct.ptx" : "cached.ptx");
    const std::vector<std::string> args{"compile",    "../src/k.cu", "--arch",
                                        "compute_90", "--cubin-out", out.string()};
    const cubby::testing::CliOutputFiles files{root_ / "stdout.txt", root_ / "stderr.txt"};
    const Outcome run = cubby::testing::finish_cli(
        cubby::testing::start_cli(args, store_, files,
                                  {disabled ? "CUBBY_DISABLE=1" : "CUBBY_DISABLE=0"}),
        files);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return read_text(out);
  };
  const std::string first = ptx(false);
  EXPECT_NE(first.find("2002"), std::string::npos) << "NVRTC reads the working folder's:\n"
                                                   << first;
  EXPECT_EQ(first, ptx(true));
  write_text(root_ / "work" / "v.cuh", "constexpr int V = 3003; // edited\n");
  const std::string edited_work = ptx(false);
  EXPECT_NE(edited_work.find("3003"), std::string::npos) << edited_work;
  EXPECT_EQ(edited_work, ptx(true));
  fs::remove(root_ / "work" / "v.cuh");  // now the one beside the source is read
  const std::string beside = ptx(false);
  EXPECT_NE(beside.find("1001"), std::string::npos) << beside;
  EXPECT_EQ(beside, ptx(true));
  write_text(root_ / "src" / "v.cuh", "constexpr int V = 4004; // edited\n");
  const std::string edited_src = ptx(false);
  EXPECT_NE(edited_src.find("4004"), std::string::npos) << edited_src;
  EXPECT_EQ(edited_src, ptx(true));
  fs::current_path(old_cwd);
}
