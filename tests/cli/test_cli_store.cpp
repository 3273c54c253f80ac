// The store admin commands of the `cubby` tool (cli/verify.cpp, gc.cpp, stats.cpp, export.cpp,
// import.cpp): run as child processes of the built binary, several at once for single flight.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cli_process.hpp"
#include "cubby/entry.hpp"
#include "cubby/stats.hpp"
#include "storage/local/disk.hpp"
#include "storage/local/store_stats.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using cubby::kMaxEntryBytes;
using cubby::testing::cli_json;
using cubby::testing::read_text;
using cubby::testing::TempDir;
using cubby::testing::write_text;
using nlohmann::json;

using Outcome = cubby::testing::CliOutcome;

// Where the run named `tag` writes its output, under `scratch`.
cubby::testing::CliOutputFiles output_files(const fs::path& scratch, const std::string& tag) {
  return {scratch / (tag + ".out"), scratch / (tag + ".err")};
}

// Starts `cubby args...` with CUBBY_DIR=store (and `extra_env`, no other CUBBY_* variable); output
// goes to files under `scratch` named by `tag`. Returns the pid.
pid_t start(const fs::path& store, const fs::path& scratch, const std::string& tag,
            const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {}) {
  return cubby::testing::start_cli(args, store, output_files(scratch, tag), extra_env, "CUBBY_");
}

Outcome finish(pid_t pid, const fs::path& scratch, const std::string& tag) {
  return cubby::testing::finish_cli(pid, output_files(scratch, tag));
}

// One ustar member (header, content, padding), built here independently of cli/archive.cpp.
// `declared` replaces the size in the header (a header that lies about its content).
std::string tar_member(const std::string& name, const std::string& content, char type = '0',
                       std::optional<std::uint64_t> declared = std::nullopt) {
  std::string header(512, '\0');
  name.copy(header.data(), 99);
  auto octal = [&](std::size_t offset, std::size_t width, std::uint64_t value) {
    char text[32];
    std::snprintf(text, sizeof text, "%0*llo", static_cast<int>(width - 1),
                  static_cast<unsigned long long>(value));
    std::memcpy(header.data() + offset, text, width - 1);
  };
  octal(100, 8, 0644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, declared.value_or(content.size()));
  octal(136, 12, 0);
  header[156] = type;
  std::memcpy(header.data() + 257, "ustar", 6);
  std::memcpy(header.data() + 263, "00", 2);
  std::memset(header.data() + 148, ' ', 8);
  std::uint64_t sum = 0;
  for (const char c : header) sum += static_cast<unsigned char>(c);
  octal(148, 7, sum);
  header[154] = '\0';
  std::string out = header + content;
  out.append((512 - content.size() % 512) % 512, '\0');
  return out;
}

const std::string kTarEnd(1024, '\0');

// The archive member name of `key` (32 hex digits), as `cubby export` writes it.
std::string member_name(const std::string& key) {
  return "entries/" + key.substr(0, 2) + "/" + key + ".entry";
}

class StoreCliTest : public ::testing::Test {
 protected:
  TempDir root_{"cli-store"};
  fs::path store_ = root_ / "store";
  fs::path kernel_ = root_ / "k.cu";

  void SetUp() override {
    write_text(kernel_,
               "namespace ns { template <class T, int N> __global__ void k(T* p) { p[0] = T(N); } "
               "}\n");
  }
  Outcome cubby(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                const fs::path& store = {}) {
    return finish(start(store.empty() ? store_ : store, root_.path(), "run", args, env),
                  root_.path(), "run");
  }
  std::vector<std::string> compile_args(int n) {
    return {"compile",
            kernel_.string(),
            "--json",
            "--arch",
            "sm_90",
            "--name-expr",
            "ns::k<float, " + std::to_string(n) + ">"};
  }
  // The JSON report of a run that must succeed.
  json parse(const Outcome& run) {
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return cli_json(run);
  }
  // `cubby args...` with its address space limited to `bytes` (RLIMIT_AS, set in a forked child
  // and inherited by the tool): an allocation over the limit fails there. Not under ASan, which
  // reserves terabytes of address space: the run is then unlimited.
  Outcome cubby_limited(const std::vector<std::string>& args, std::uint64_t bytes) {
    const pid_t child = ::fork();
    if (child == 0) {
#if !CUBBY_TEST_ASAN
      const rlimit limit{bytes, bytes};
      if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(125);
#endif
      const Outcome run =
          finish(start(store_, root_.path(), "limited", args), root_.path(), "limited");
      ::_exit(run.exit_code < 0 ? 126 : run.exit_code);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0) {
    }
    Outcome run;
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    run.out = read_text(root_ / "limited.out");
    run.err = read_text(root_ / "limited.err");
    return run;
  }
  fs::path only_entry() {
    for (const auto& item : fs::recursive_directory_iterator(store_ / "entries")) {
      if (item.path().extension() == ".entry") return item.path();
    }
    return {};
  }
};

TEST_F(StoreCliTest, EightConcurrentColdCompilesCompileOnce) {
  constexpr int kProcesses = 8;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcesses; ++p) {
    const std::string tag = std::string("p").append(std::to_string(p));
    pids.push_back(start(store_, root_.path(), tag, compile_args(7)));
  }
  std::set<std::string> names;
  int compiled = 0;
  for (int p = 0; p < kProcesses; ++p) {
    const std::string tag = std::string("p").append(std::to_string(p));
    const json out = parse(finish(pids[static_cast<std::size_t>(p)], root_.path(), tag));
    compiled += out.value("hit", true) ? 0 : 1;
    names.insert(out["lowered_names"].dump());
  }
  EXPECT_EQ(compiled, 1);
  EXPECT_EQ(names.size(), 1u);
  const json stats = parse(cubby({"stats", "--json"}));
  EXPECT_EQ(stats["compiles"], 1);
  EXPECT_EQ(stats["misses"], 1);
  EXPECT_EQ(stats["hits_disk"], kProcesses - 1);
  EXPECT_EQ(stats["entries"], 1);
  EXPECT_GT(stats["compile_ms_saved"].get<double>(), 0.0);
}

TEST_F(StoreCliTest, VerifyReportsThenFixesACorruptEntry) {
  parse(cubby(compile_args(1)));
  parse(cubby(compile_args(2)));
  const json clean = parse(cubby({"verify", "--json"}));
  EXPECT_EQ(clean["entries"], 2);
  EXPECT_EQ(clean["bad"], 0);
  const fs::path entry = only_entry();
  std::string bytes = read_text(entry);
  bytes[bytes.size() / 2] ^= 0x40;
  write_text(entry, bytes);
  const Outcome found = cubby({"verify", "--json"});
  EXPECT_EQ(found.exit_code, 1);
  const json report = cli_json(found);
  EXPECT_EQ(report["bad"], 1);
  EXPECT_EQ(report["problems"][0]["path"], entry.string());
  EXPECT_TRUE(fs::exists(entry));
  const json fixed = parse(cubby({"verify", "--fix", "--json"}));
  EXPECT_EQ(fixed["removed"], 1);
  EXPECT_FALSE(fs::exists(entry));
  EXPECT_EQ(parse(cubby({"verify", "--json"}))["entries"], 1);
}

// A FIFO (reading it would wait for a writer for ever) or a link to /dev/zero (read until memory
// runs out) at an entry path: every command that reads entries refuses it at once and says so;
// verify reports it, verify --fix and gc remove it, a compile replaces it.
TEST_F(StoreCliTest, NonRegularFilesAtEntryPathsNeverHangAnyCommand) {
  const std::string fifo_key = parse(cubby(compile_args(1)))["key"];
  const std::string zero_key = parse(cubby(compile_args(2)))["key"];
  auto entry_path = [&](const std::string& key) {
    return store_ / "entries" / key.substr(0, 2) / (key + ".entry");
  };
  auto plant = [&] {
    fs::remove(entry_path(fifo_key));
    fs::remove(entry_path(zero_key));
    ASSERT_EQ(::mkfifo(entry_path(fifo_key).c_str(), 0664), 0);
    fs::create_symlink("/dev/zero", entry_path(zero_key));
  };
  plant();

  const Outcome fifo_show = cubby({"show", fifo_key});
  EXPECT_EQ(fifo_show.exit_code, 1);
  EXPECT_NE(fifo_show.err.find("a FIFO, not a regular file"), std::string::npos) << fifo_show.err;
  EXPECT_NE(fifo_show.err.find("cubby verify --fix"), std::string::npos) << fifo_show.err;
  const Outcome zero_show = cubby({"show", zero_key});
  EXPECT_EQ(zero_show.exit_code, 1);
  EXPECT_NE(zero_show.err.find("symbolic link"), std::string::npos) << zero_show.err;

  const json listed = parse(cubby({"ls", "--json"}));
  ASSERT_EQ(listed.size(), 2u);
  for (const auto& row : listed) EXPECT_EQ(row["status"], "not_regular") << row.dump();

  const Outcome exported = cubby({"export", (root_ / "out.tar").string(), "--json"});
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(cli_json(exported)["skipped_bad"], 2);
  EXPECT_NE(exported.err.find("skipping entry " + fifo_key), std::string::npos) << exported.err;

  const Outcome verified = cubby({"verify", "--json"});
  EXPECT_EQ(verified.exit_code, 1);
  EXPECT_EQ(cli_json(verified)["bad"], 2);
  EXPECT_EQ(parse(cubby({"verify", "--fix", "--json"}))["removed"], 2);
  EXPECT_FALSE(fs::exists(fs::symlink_status(entry_path(fifo_key))));
  EXPECT_FALSE(fs::exists(fs::symlink_status(entry_path(zero_key))));

  plant();
  EXPECT_EQ(parse(cubby({"gc", "--json"}))["non_regular_removed"], 2);
  EXPECT_FALSE(fs::exists(fs::symlink_status(entry_path(fifo_key))));

  plant();
  const json compiled = parse(cubby(compile_args(1)));  // a miss: compiled, written over it
  EXPECT_EQ(compiled["tier"], "compiled");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(entry_path(fifo_key))));
  EXPECT_EQ(parse(cubby(compile_args(1)))["tier"], "disk");
}

TEST_F(StoreCliTest, ShowOfACorruptEntryAdvisesAFixThatExists) {
  const std::string key = parse(cubby(compile_args(1)))["key"];
  const fs::path entry = only_entry();
  std::string bytes = read_text(entry);
  bytes[bytes.size() / 2] ^= 0x40;
  write_text(entry, bytes);
  const Outcome shown = cubby({"show", key});
  EXPECT_EQ(shown.exit_code, 1);
  EXPECT_NE(shown.err.find("cubby verify --fix"), std::string::npos) << shown.err;
  EXPECT_EQ(shown.err.find("once available"), std::string::npos) << shown.err;
}

TEST_F(StoreCliTest, GcEvictsToMaxSizeAndCleansLeftovers) {
  for (int n = 1; n <= 4; ++n) parse(cubby(compile_args(n)));
  const fs::path entry = only_entry();
  write_text(fs::path(entry.string() + ".tmp.999999.0123456789abcdef"), "torn");
  fs::last_write_time(fs::path(entry.string() + ".tmp.999999.0123456789abcdef"),
                      fs::file_time_type::clock::now() - std::chrono::hours(1));
  write_text(store_ / "locks/00/00000000000000000000000000000000.lock", "garbage\xff");
  const std::uint64_t one = fs::file_size(entry);
  const json report =
      parse(cubby({"gc", "--max-size", std::to_string(one * 2 + one / 2) + "B", "--json"}));
  EXPECT_EQ(report["entries_before"], 4);
  EXPECT_EQ(report["evicted"], 2);
  EXPECT_EQ(report["entries"], 2);
  EXPECT_EQ(report["temp_removed"], 1);
  EXPECT_EQ(report["locks_removed"], 1);
  EXPECT_EQ(parse(cubby({"stats", "--json"}))["evictions"], 2);
  EXPECT_EQ(parse(cubby({"verify", "--json"}))["bad"], 0);
  const Outcome bad = cubby({"gc", "--max-size", "lots"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("500M"), std::string::npos) << bad.err;
}

TEST_F(StoreCliTest, ExportThenImportIntoAFreshStoreServesHits) {
  parse(cubby(compile_args(1), {"CUBBY_SUITE=exported suite"}));
  parse(cubby(compile_args(2), {"CUBBY_SUITE=exported suite"}));
  const fs::path archive = root_ / "warm.tar";
  const json exported = parse(cubby({"export", archive.string(), "--json"}));
  EXPECT_EQ(exported["entries"], 2);
  EXPECT_EQ(exported["manifests"], 1);
  const fs::path fresh = root_ / "fresh";
  const json imported = parse(cubby({"import", archive.string(), "--json"}, {}, fresh));
  EXPECT_EQ(imported["imported"], 2);
  EXPECT_EQ(imported["manifests"], 1);
  EXPECT_EQ(imported["rejected"], 0);
  // The suite's recipes came along: the fresh store knows what to warm (all of it is there).
  const json warmed = parse(cubby({"warm", "--json"}, {}, fresh));
  EXPECT_EQ(warmed["suites"], json::array({"exported suite"}));
  EXPECT_EQ(warmed["recipes"], 2);
  EXPECT_EQ(warmed["warm"], 2);
  const json again = parse(cubby({"import", archive.string(), "--json"}, {}, fresh));
  EXPECT_EQ(again["present"], 2);
  const json hit = parse(cubby(compile_args(2), {}, fresh));
  EXPECT_EQ(hit["tier"], "disk");
  EXPECT_EQ(parse(cubby({"stats", "--json"}, {}, fresh))["entries"], 2);
}

// An older cubby exported through "<FILE>.tmp.<its pid>": a link planted there by another user
// (in a shared, sticky folder) made it overwrite the link's target. The export runs in a child
// that plants the link at that name for its own pid, then execs cubby (same pid).
TEST_F(StoreCliTest, ExportNeverWritesThroughALinkPlantedAtItsTempName) {
  parse(cubby(compile_args(1)));
  const fs::path victim = root_ / "victim";
  write_text(victim, "precious");
  const fs::path archive = root_ / "warm.tar";
  const fs::path out = root_ / "export.out";
  const fs::path err = root_ / "export.err";
  const std::string cli = CUBBY_CLI_PATH;
  const std::string store_env = "CUBBY_DIR=" + store_.string();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string planted = archive.string() + ".tmp." + std::to_string(::getpid());
    if (::symlink(victim.c_str(), planted.c_str()) != 0) ::_exit(90);
    const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out_fd < 0 || err_fd < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) ::_exit(91);
    ::putenv(const_cast<char*>(store_env.c_str()));
    const std::string archive_arg = archive.string();
    char* const argv[] = {const_cast<char*>(cli.c_str()), const_cast<char*>("export"),
                          const_cast<char*>(archive_arg.c_str()), nullptr};
    ::execv(argv[0], argv);
    ::_exit(92);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << read_text(err);
  EXPECT_EQ(read_text(victim), "precious");
  const fs::path planted = archive.string() + ".tmp." + std::to_string(child);
  EXPECT_TRUE(fs::is_symlink(planted));  // left alone
  EXPECT_EQ(fs::read_symlink(planted), victim);
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(archive)));
  const json imported = parse(cubby({"import", archive.string(), "--json"}, {}, root_ / "fresh"));
  EXPECT_EQ(imported["imported"], 1);
}

// What a FIFO gives a reader, read by a thread until the writer closes it (bounded: 60 s).
class FifoReader {
 public:
  explicit FifoReader(const fs::path& fifo) : thread_([this, fifo] { read_all(fifo); }) {}
  FifoReader(const FifoReader&) = delete;
  FifoReader& operator=(const FifoReader&) = delete;
  ~FifoReader() { thread_.join(); }
  std::string finish() {
    thread_.join();
    thread_ = std::thread([] {});
    return bytes_;
  }

 private:
  void read_all(const fs::path& fifo) {
    const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // no writer yet: no wait
    if (fd < 0) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool writer_seen = false;
    while (std::chrono::steady_clock::now() < deadline) {
      char chunk[65536];
      const ssize_t got = ::read(fd, chunk, sizeof chunk);
      if (got > 0) {
        writer_seen = true;
        bytes_.append(chunk, static_cast<std::size_t>(got));
      } else if (got == 0 && writer_seen) {
        break;  // the writer closed it
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // no writer, or no data yet
      }
    }
    ::close(fd);
  }
  std::string bytes_;
  std::thread thread_;
};

// `cubby export FILE` renamed its archive over whatever FILE was (as root, /dev/full became a
// regular file). A FIFO is written in place; a folder or a link to a file is refused, untouched.
TEST_F(StoreCliTest, ExportWritesAFifoInPlaceAndNeverReplacesAFolderOrALink) {
  parse(cubby(compile_args(1)));
  const fs::path fifo = root_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const fs::path link_to_fifo = root_ / "pipe-link";
  fs::create_symlink(fifo, link_to_fifo);
  for (const fs::path& target : {fifo, link_to_fifo}) {
    FifoReader reader(fifo);
    const Outcome exported = cubby({"export", target.string(), "--json"});
    const std::string archive = reader.finish();
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    EXPECT_EQ(parse(exported)["entries"], 1);
    EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo))) << "the FIFO was replaced";
    write_text(root_ / "from-pipe.tar", archive);
    const json imported =
        parse(cubby({"import", (root_ / "from-pipe.tar").string(), "--json"}, {}, root_ / "fresh"));
    EXPECT_EQ(imported["imported"].get<int>() + imported["present"].get<int>(), 1)
        << imported.dump();
  }
  EXPECT_TRUE(fs::is_symlink(link_to_fifo));

  const fs::path folder = root_ / "folder";
  fs::create_directory(folder);
  const fs::path victim = root_ / "victim";
  write_text(victim, "precious");
  const fs::path link = root_ / "link";
  fs::create_symlink(victim, link);
  const fs::path dangling = root_ / "dangling";
  fs::create_symlink(root_ / "nothing-here", dangling);
  for (const fs::path& target : {folder, link, dangling}) {
    const Outcome refused = cubby({"export", target.string()});
    EXPECT_EQ(refused.exit_code, 2) << target;
    EXPECT_NE(refused.err.find("export never replaces"), std::string::npos) << refused.err;
  }
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(folder)));
  EXPECT_TRUE(fs::is_empty(folder));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_text(victim), "precious");
  EXPECT_TRUE(fs::is_symlink(dangling));
  EXPECT_FALSE(fs::exists(root_ / "nothing-here"));
}

TEST_F(StoreCliTest, ImportRejectsBadEntriesAndDamagedArchives) {
  parse(cubby(compile_args(1)));
  const fs::path archive = root_ / "warm.tar";
  parse(cubby({"export", archive.string(), "--json"}));
  std::string tar = read_text(archive);
  // Flip a byte inside the first member's content (after its 512-byte header).
  std::string damaged_entry = tar;
  damaged_entry[512 + 100] ^= 0x01;
  write_text(root_ / "bad-entry.tar", damaged_entry);
  const Outcome rejected =
      cubby({"import", (root_ / "bad-entry.tar").string(), "--json"}, {}, root_ / "s1");
  EXPECT_EQ(rejected.exit_code, 1);
  EXPECT_EQ(cli_json(rejected)["rejected"], 1);
  EXPECT_FALSE(fs::exists(root_ / "s1/entries"));
  // A damaged header, a truncated archive, a file that is not an archive: clear failures.
  std::string bad_header = tar;
  bad_header[10] ^= 0x01;
  write_text(root_ / "bad-header.tar", bad_header);
  write_text(root_ / "short.tar", tar.substr(0, 700));
  write_text(root_ / "text.tar", "this is not an archive");
  for (const char* name : {"bad-header.tar", "short.tar", "text.tar"}) {
    const Outcome run = cubby({"import", (root_ / name).string()}, {}, root_ / "s2");
    EXPECT_EQ(run.exit_code, 1) << name;
    EXPECT_NE(run.err.find("cubby export"), std::string::npos) << name << ": " << run.err;
  }
  EXPECT_EQ(cubby({"import", (root_ / "missing.tar").string()}).exit_code, 2);
}

TEST_F(StoreCliTest, StatsCountAcrossProcessesAndZeroResetsThem) {
  parse(cubby(compile_args(1)));
  parse(cubby(compile_args(1)));
  json stats = parse(cubby({"stats", "--json"}));
  EXPECT_EQ(stats["compiles"], 1);
  EXPECT_EQ(stats["hits_disk"], 1);
  EXPECT_DOUBLE_EQ(stats["hit_rate"].get<double>(), 0.5);
  const Outcome human = cubby({"stats"});
  EXPECT_NE(human.out.find("compile time saved"), std::string::npos) << human.out;
  stats = parse(cubby({"stats", "--zero", "--json"}));
  EXPECT_EQ(stats["compiles"], 0);
  EXPECT_EQ(stats["entries"], 1);
}

// A program compiled without the store (an option the key cannot cover) is counted by reason in
// the store's counters: `cubby stats --json` has the reason's counter, its text the summary line.
TEST_F(StoreCliTest, StatsCountProgramsCompiledWithoutTheStoreByReason) {
  std::vector<std::string> args = compile_args(1);
  args.insert(args.end(), {"--option=-Xcudafe", "--option=--no_rtti"});
  EXPECT_EQ(parse(cubby(args))["tier"], "compiled");
  const json again = parse(cubby(args));
  EXPECT_EQ(again["tier"], "compiled");
  EXPECT_EQ(again["uncached"], "unkeyable_option");
  EXPECT_EQ(again["uncached_detail"], "-Xcudafe --no_rtti (program cubby_program.cu)");
  parse(cubby(compile_args(1)));
  const json stats = parse(cubby({"stats", "--json"}));
  EXPECT_EQ(stats["uncached_unkeyable_option"], 2) << stats.dump();
  EXPECT_EQ(stats["programs"], 3) << stats.dump();
  const Outcome human = cubby({"stats"});
  EXPECT_NE(human.out.find("2 of 3 programs compiled without the store: an option the key cannot "
                           "cover\n"),
            std::string::npos)
      << human.out;
}

// Every counter of the tables (cubby/stats.hpp, store_stats.hpp) as `cubby stats` shows it: read
// from a stats/counters file as earlier versions wrote it ("name value" lines), each counter by
// its Stats name in --json (times in ms from the persisted microseconds), each label as a row.
TEST_F(StoreCliTest, StatsShowEveryCounterOfTheTable) {
  std::string file;
  std::int64_t value = 1000;
  std::map<std::string_view, std::int64_t> persisted;
  for (const std::string_view name : cubby::persisted_names()) {
    persisted[name] = ++value;
    file += std::string(name) + " " + std::to_string(value) + "\n";
  }
  write_text(store_ / "stats/counters", file);
  const json stats = parse(cubby({"stats", "--json"}));
  for (const cubby::StatInfo& stat : cubby::kStats) {
    SCOPED_TRACE(std::string(stat.name));
    ASSERT_FALSE(stat.persisted.empty());
    ASSERT_TRUE(stats.contains(std::string(stat.name))) << stats.dump();
    const std::int64_t stored = persisted.at(stat.persisted);
    if (stat.unit == cubby::Unit::ms) {
      EXPECT_DOUBLE_EQ(stats[std::string(stat.name)].get<double>(),
                       static_cast<double>(stored) / 1000.0);
    } else {
      EXPECT_EQ(stats[std::string(stat.name)], stored);
    }
    // Issue 27 item 5: one name and one unit per counter: no second, persisted-name copy.
    if (stat.persisted != stat.name) {
      EXPECT_FALSE(stats.contains(std::string(stat.persisted))) << stat.persisted;
    }
  }
  EXPECT_FALSE(stats.contains("counters")) << stats.dump();
  const Outcome human = cubby({"stats"});
  EXPECT_EQ(human.exit_code, 0) << human.err;
  // Every value starts in one column, one space after the longest label ("served after a wait"
  // once touched its value).
  std::size_t column = std::string_view("compile time saved").size() + 1;
  for (const cubby::StatInfo& stat : cubby::kStats)
    column = std::max(column, stat.label.size() + 1);
  for (const std::string_view label : {"store ", "entries ", "max size ", "hit rate "}) {
    EXPECT_NE(human.out.find(std::string(label) + std::string(column - label.size(), ' ')),
              std::string::npos)
        << label << "\n"
        << human.out;
  }
  auto row = [&](std::string_view label, std::int64_t shown) {
    const std::string line =
        std::string(label) + std::string(column - label.size(), ' ') + std::to_string(shown) + "\n";
    EXPECT_NE(human.out.find(line), std::string::npos) << line << " not in\n" << human.out;
  };
  for (const cubby::StatInfo& stat : cubby::kStats) {
    if (!stat.label.empty()) row(stat.label, persisted.at(stat.persisted));
  }
  for (const cubby::StoreCounterInfo& counter : cubby::kStoreCounters) {
    EXPECT_EQ(stats[std::string(counter.name)], persisted.at(counter.name));
    if (!counter.label.empty()) row(counter.label, persisted.at(counter.name));
  }
}

TEST_F(StoreCliTest, BadInputGetsClearMessagesAndLosesNothing) {
  parse(cubby(compile_args(1)));
  // Foreign files, a garbage lock file, garbage counters, a future-format entry.
  write_text(store_ / "entries/ab/notes.txt", "mine");
  write_text(store_ / "locks/stats.lock", "\x01\x02 garbage");
  write_text(store_ / "stats/counters", "garbage without structure\n");
  std::string future = read_text(only_entry());
  future[8] = 99;
  write_text(store_ / "entries/ff/ffffffffffffffffffffffffffffffff.entry", future);
  const Outcome stats = cubby({"stats", "--json"});
  EXPECT_EQ(stats.exit_code, 0);
  EXPECT_NE(stats.err.find("reset"), std::string::npos) << stats.err;
  const json verify = parse(cubby({"verify", "--fix", "--json"}));
  EXPECT_EQ(verify["bad"], 0);
  EXPECT_EQ(verify["newer_format"], 1);
  parse(cubby({"gc", "--json"}));
  EXPECT_TRUE(fs::exists(store_ / "entries/ab/notes.txt"));
  EXPECT_TRUE(fs::exists(store_ / "entries/ff/ffffffffffffffffffffffffffffffff.entry"));
  EXPECT_EQ(parse(cubby(compile_args(1)))["tier"], "disk");
  const Outcome bad_size = cubby(compile_args(1), {"CUBBY_MAX_SIZE=a lot"});
  EXPECT_EQ(bad_size.exit_code, 2);
  EXPECT_NE(bad_size.err.find("CUBBY_MAX_SIZE"), std::string::npos) << bad_size.err;
}

TEST_F(StoreCliTest, ExplainPrintsEveryKeyFieldWithItsHash) {
  const json out = parse(cubby([&] {
    auto args = compile_args(1);
    args.push_back("--explain");
    return args;
  }()));
  ASSERT_TRUE(out["explain"].is_array());
  std::set<std::string> labels;
  for (const auto& field : out["explain"]) {
    labels.insert(field["label"].get<std::string>());
    EXPECT_EQ(field["hash"].get<std::string>().size(), 32u);
  }
  EXPECT_GE(labels.size(), 5u);
}

// An entry copied over another key's file passes its own checksum and symbol checks: verify, show
// and ls must see that it is not the entry of the key it is stored under.
TEST_F(StoreCliTest, VerifyShowAndLsRefuseAnEntryCopiedToAnotherKeysFile) {
  const std::string one = parse(cubby(compile_args(1)))["key"];
  const std::string two = parse(cubby(compile_args(2)))["key"];
  const fs::path two_path = store_ / member_name(two);
  fs::copy_file(store_ / member_name(one), two_path, fs::copy_options::overwrite_existing);
  const Outcome found = cubby({"verify", "--json"});
  EXPECT_EQ(found.exit_code, 1) << found.out << found.err;
  const json report = cli_json(found);
  ASSERT_FALSE(report.is_discarded()) << found.out;
  EXPECT_EQ(report["bad"], 1);
  ASSERT_EQ(report["problems"].size(), 1u);
  EXPECT_EQ(report["problems"][0]["key"], two);
  EXPECT_NE(report["problems"][0]["problem"].get<std::string>().find("belongs to key " + one),
            std::string::npos)
      << report["problems"][0]["problem"];
  const Outcome show = cubby({"show", two});
  EXPECT_EQ(show.exit_code, 1);
  EXPECT_NE(show.err.find("belongs to key " + one), std::string::npos) << show.err;
  EXPECT_NE(show.err.find("cubby verify --fix"), std::string::npos) << show.err;
  EXPECT_EQ(show.err.find("once available"), std::string::npos) << show.err;
  const json rows = parse(cubby({"ls", "--json"}));
  for (const auto& row : rows) EXPECT_EQ(row["status"], row["key"] == two ? "corrupt" : "ok");
  EXPECT_EQ(parse(cubby({"verify", "--fix", "--json"}))["removed"], 1);
  EXPECT_FALSE(fs::exists(two_path));
  EXPECT_EQ(parse(cubby(compile_args(2)))["tier"], "compiled");
}

TEST_F(StoreCliTest, ImportRefusesAMemberNamedAfterAnotherKey) {
  const std::string one = parse(cubby(compile_args(1)))["key"];
  const std::string entry = read_text(store_ / member_name(one));
  const std::string other(32, 'e');
  write_text(root_ / "renamed.tar",
             tar_member(member_name(other), entry) + tar_member(member_name(one), entry) + kTarEnd);
  const fs::path fresh = root_ / "fresh";
  const Outcome run = cubby({"import", (root_ / "renamed.tar").string(), "--json"}, {}, fresh);
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  const json report = cli_json(run);
  ASSERT_FALSE(report.is_discarded()) << run.out;
  EXPECT_EQ(report["imported"], 1);  // the member under its own name
  EXPECT_EQ(report["rejected"], 1);
  ASSERT_EQ(report["problems"].size(), 1u);
  EXPECT_EQ(report["problems"][0]["key"], other);
  EXPECT_NE(report["problems"][0]["problem"].get<std::string>().find("belongs to key " + one),
            std::string::npos)
      << report["problems"][0]["problem"];
  EXPECT_FALSE(fs::exists(fresh / member_name(other)));
  EXPECT_TRUE(fs::exists(fresh / member_name(one)));
}

// Members of a newer format cannot be verified by this cubby: never imported unverified.
TEST_F(StoreCliTest, ImportLeavesOutEntriesOfAnotherFormatVersion) {
  const std::string one = parse(cubby(compile_args(1)))["key"];
  std::string newer = read_text(store_ / member_name(one));
  newer[8] = static_cast<char>(cubby::kEntryFormatVersion + 1);
  write_text(root_ / "newer.tar", tar_member(member_name(one), newer) + kTarEnd);
  const fs::path fresh = root_ / "fresh";
  const json report = parse(cubby({"import", (root_ / "newer.tar").string(), "--json"}, {}, fresh));
  EXPECT_EQ(report["imported"], 0);
  EXPECT_EQ(report["other_format"], 1);
  EXPECT_FALSE(fs::exists(fresh / member_name(one)));
  const Outcome text = cubby({"import", (root_ / "newer.tar").string()}, {}, fresh);
  EXPECT_NE(text.out.find("1 of another cubby release's format left out"), std::string::npos)
      << text.out;
}

TEST_F(StoreCliTest, ImportCountsLinkAndFolderMembersAsForeign) {
  const std::string one = parse(cubby(compile_args(1)))["key"];
  const std::string entry = read_text(store_ / member_name(one));
  const std::string other(32, 'd');
  write_text(root_ / "mixed.tar", tar_member("entries/", "", '5') +
                                      tar_member(member_name(other), "", '2') +  // a symlink
                                      tar_member(member_name(one), "", '1') +    // a hard link
                                      tar_member(member_name(one), entry) + kTarEnd);
  const fs::path fresh = root_ / "fresh";
  const json report = parse(cubby({"import", (root_ / "mixed.tar").string(), "--json"}, {}, fresh));
  EXPECT_EQ(report["imported"], 1);
  EXPECT_EQ(report["foreign"], 3);
  const Outcome text = cubby({"import", (root_ / "mixed.tar").string()}, {}, root_ / "fresh2");
  EXPECT_NE(text.out.find("3 foreign members skipped"), std::string::npos) << text.out;
}

TEST_F(StoreCliTest, ImportOfAFolderOrAnEmptyFileSaysWhatIsWrong) {
  const Outcome folder = cubby({"import", root_.path().string()});
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_NE(folder.err.find("is a folder"), std::string::npos) << folder.err;
  EXPECT_EQ(folder.err.find("truncated"), std::string::npos) << folder.err;
  write_text(root_ / "empty.tar", "");
  const Outcome empty = cubby({"import", (root_ / "empty.tar").string()});
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_NE(empty.err.find("the archive is empty"), std::string::npos) << empty.err;
}

// A 1.5 KB archive whose header declares a 4 GiB member (over the entry bound) or 512 MiB (under
// it, over what the archive holds): refused before anything is allocated for it (the tool runs
// with 1 GiB of address space), from a file and from a pipe.
TEST_F(StoreCliTest, ImportOfAMemberDeclaringMoreThanTheArchiveHoldsAllocatesNothing) {
  for (const std::uint64_t declared : {4ull << 30, 512ull << 20}) {
    SCOPED_TRACE(declared);
    const std::string archive =
        tar_member(member_name(std::string(32, 'c')), std::string(1024, 'x'), '0', declared);
    ASSERT_EQ(archive.size(), 1536u);
    write_text(root_ / "huge.tar", archive);
    const std::string defect =
        declared > kMaxEntryBytes
            ? "declares " + std::to_string(declared) + " bytes, over the limit of " +
                  std::to_string(kMaxEntryBytes)
            : "declares " + std::to_string(declared) + " bytes but the archive has only 1024 left";
    const Outcome file = cubby_limited({"import", (root_ / "huge.tar").string()}, 1ull << 30);
    EXPECT_EQ(file.exit_code, 1) << file.err;
    EXPECT_NE(file.err.find(defect), std::string::npos) << file.err;
    EXPECT_NE(file.err.find("cubby export"), std::string::npos) << file.err;

    const fs::path fifo = root_ / "huge.fifo";
    fs::remove(fifo);
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
    const pid_t writer = ::fork();
    if (writer == 0) {  // feeds the pipe once the tool opens it, then closes it
      const int fd = ::open(fifo.c_str(), O_WRONLY);
      const bool written = fd >= 0 && ::write(fd, archive.data(), archive.size()) ==
                                          static_cast<ssize_t>(archive.size());
      ::_exit(written ? 0 : 1);
    }
    const Outcome pipe = cubby_limited({"import", fifo.string()}, 1ull << 30);
    int status = 0;
    if (::waitpid(writer, &status, WNOHANG) == 0) {  // the tool never opened the pipe
      ::kill(writer, SIGKILL);
      ::waitpid(writer, &status, 0);
    }
    EXPECT_EQ(pipe.exit_code, 1) << pipe.err;
    // A pipe cannot tell what is left: the bound refuses at once, else the end comes early.
    EXPECT_NE(pipe.err.find(declared > kMaxEntryBytes ? defect : "truncated"), std::string::npos)
        << pipe.err;
    EXPECT_EQ(pipe.err.find("out of memory"), std::string::npos) << pipe.err;
  }
}

}  // namespace
