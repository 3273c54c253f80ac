// Prefetch: `cubby warm --prefetch` started beside a run, when it starts, what it compiles, and
// that it never outlives the process that started it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "cubby/cache.hpp"
#include "cubby/prefetch.hpp"
#include "storage/local/disk.hpp"
#include "storage/local/manifests.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::ScopedEnv;
using testing::TempDir;

CompileRequest program(int n) {
  CompileRequest r;
  r.source =
      "__global__ void k" + std::to_string(n) + "(int* p) { *p = " + std::to_string(n) + "; }\n";
  r.program_name = "p" + std::to_string(n) + ".cu";
  r.name_expressions = {"k" + std::to_string(n)};
  r.arch = "sm_90";
  return r;
}

// A store whose suite "s" recorded p0..p(count-1), with no entries left (keys changed).
Config recorded_store(const fs::path& dir, int count) {
  Config config;
  config.dir = dir;
  config.suite = "s";
  {
    Cache cache(config);
    for (int n = 0; n < count; ++n) (void)cache.compile(program(n));
  }
  fs::remove_all(dir / "entries");
  return config;
}

// Whether process `pid` is gone (or a zombie no one reaped yet: it runs no more).
bool gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  const std::size_t close = text.rfind(')');
  return close == std::string::npos || text.substr(close + 2, 1) == "Z";
}

// The processes whose parent is `parent`.
std::set<pid_t> children_of(pid_t parent) {
  std::set<pid_t> children;
  for (const auto& item : fs::directory_iterator("/proc")) {
    const std::string name = item.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(item.path() / "stat");
    std::string text;
    if (!std::getline(stat, text)) continue;
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && state != "Z") children.insert(std::stoi(name));
  }
  return children;
}

template <class Predicate>
bool wait_until(Predicate done, std::chrono::seconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

TEST(Prefetch, StartsOnlyWhenThereIsSomethingToWarmAndSaysWhyNot) {
  TempDir dir("prefetch-notes");
  const ScopedEnv cli("CUBBY_CLI", CUBBY_CLI_PATH);
  Config config;
  config.dir = dir.path();
  config.suite = "never recorded";
  Prefetch prefetch;
  prefetch.start(config);
  EXPECT_FALSE(prefetch.running());
  EXPECT_EQ(prefetch.note(), "");  // the first run records; nothing to say
  config = recorded_store(dir.path(), 1);
  config.read_only = true;
  prefetch.start(config);
  EXPECT_FALSE(prefetch.running());
  EXPECT_NE(prefetch.note().find("read-only"), std::string::npos) << prefetch.note();
  config.read_only = false;
  config.prefetch = false;
  prefetch.start(config);
  EXPECT_FALSE(prefetch.running());
  EXPECT_EQ(prefetch.note(), "");
  config.prefetch = true;
  const ScopedEnv missing("CUBBY_CLI", (dir.path() / "no-such-tool").string());
  prefetch.start(config);
  EXPECT_FALSE(prefetch.running());
  EXPECT_NE(prefetch.note().find("CUBBY_CLI"), std::string::npos) << prefetch.note();
}

TEST(Prefetch, CompilesTheRecordedKernelsSoTheRunHitsThem) {
  TempDir dir("prefetch-run");
  const ScopedEnv cli("CUBBY_CLI", CUBBY_CLI_PATH);
  const Config config = recorded_store(dir.path(), 4);
  Prefetch prefetch;
  prefetch.start(config);
  ASSERT_TRUE(prefetch.running()) << prefetch.note();
  const DiskTier disk(dir.path());
  EXPECT_TRUE(wait_until([&] { return testing::count_entries(disk) == 4; }, 120s));
  prefetch.stop();
  EXPECT_FALSE(prefetch.running());
  Cache cache(config);
  for (int n = 0; n < 4; ++n) EXPECT_TRUE(cache.compile(program(n)).hit) << n;
}

// Program n of a suite whose kernels read `include`/v.cuh.
CompileRequest reading_header(int n, const fs::path& include) {
  CompileRequest r = program(n);
  r.source = "#include \"v.cuh\"\n" + r.source;
  r.options = {"-I" + include.string()};
  return r;
}

// How a header is edited after the suite's last run: as an editor does (a new modification
// time), with a time from before that run (a copy that keeps its time: only a miss shows it), or
// not at all but touched (a new time, the same text: every key stays).
enum class Edit { now, keeping_an_old_time, touch };

// A store whose suite "s" recorded `count` programs reading a header that was edited since: the
// entries of the last run are there, under keys no run asks for any more (a header edit), and
// the suite's miss file is set an hour back (the recording's own misses are no signal).
Config edited_store(const fs::path& dir, int count, Edit edit = Edit::keeping_an_old_time) {
  const fs::path include = dir / "include";
  testing::write_text(include / "v.cuh", "constexpr int kV = 1;\n");
  Config config;
  config.dir = dir / "store";
  config.suite = "s";
  {
    Cache cache(config);
    for (int n = 0; n < count; ++n) (void)cache.compile(reading_header(n, include));
  }
  // The last run an hour ago (file times have a coarse tick: an edit right after the run may
  // carry the run's own time), the edit now or before that run.
  fs::last_write_time(suite_keys_path(config.dir, config.suite),
                      fs::file_time_type::clock::now() - 1h);
  testing::write_text(include / "v.cuh",
                      edit == Edit::touch ? "constexpr int kV = 1;\n" : "constexpr int kV = 2;\n");
  if (edit == Edit::keeping_an_old_time) {
    fs::last_write_time(include / "v.cuh", fs::file_time_type::clock::now() - 2h);
  }
  const fs::path miss = suite_miss_path(config.dir, config.suite);
  if (fs::exists(miss)) fs::last_write_time(miss, fs::file_time_type::clock::now() - 1h);
  return config;
}

// After 1.5 s, `prefetch` still waits: no worker started, the store holds `entries` entries.
void expect_still_waiting(const Prefetch& prefetch, const fs::path& store, int entries) {
  std::this_thread::sleep_for(1500ms);
  EXPECT_TRUE(children_of(static_cast<pid_t>(prefetch.pid())).empty());
  EXPECT_EQ(testing::count_entries(DiskTier(store)), entries);
  EXPECT_TRUE(prefetch.running());
}

// A store whose header was edited since its suite's last run, keeping an old time, so that only
// a miss shows the edit (edited_store), and a prefetch of that suite started at the run's first
// miss.
class PrefetchAtFirstMiss : public ::testing::Test {
 protected:
  void start(int programs) {
    config_ = edited_store(dir_.path(), programs);
    prefetch_.start(config_, PrefetchStart::at_first_miss);
    ASSERT_TRUE(prefetch_.running()) << prefetch_.note();
  }

  TempDir dir_{"prefetch-first-miss"};
  ScopedEnv cli_{"CUBBY_CLI", CUBBY_CLI_PATH};
  Config config_;
  Prefetch prefetch_;
};

TEST_F(PrefetchAtFirstMiss, ItWaitsForARunToMissThenCompilesTheRest) {
  ASSERT_NO_FATAL_FAILURE(start(4));
  // Without a miss it starts no worker and compiles nothing (a warm run), however long it waits;
  // the store holds the last run's entries, from before the edit.
  expect_still_waiting(prefetch_, config_.dir, 4);
  // A process of the run misses program 3 and compiles it; the prefetch then compiles 0..2.
  const fs::path include = dir_.path() / "include";
  {
    Cache cache(config_);
    EXPECT_FALSE(cache.compile(reading_header(3, include)).hit);
  }
  EXPECT_TRUE(wait_until([&] { return testing::count_entries(DiskTier(config_.dir)) == 8; }, 120s));
  prefetch_.stop();
  Cache cache(config_);
  for (int n = 0; n < 4; ++n) EXPECT_TRUE(cache.compile(reading_header(n, include)).hit) << n;
}

TEST_F(PrefetchAtFirstMiss, AMissOfAnotherSuiteOrOneWithoutASuiteIsNoSignal) {
  ASSERT_NO_FATAL_FAILURE(start(2));
  int n = 7;
  for (const char* suite : {"another suite", ""}) {
    Config other = config_;
    other.suite = suite;
    Cache cache(other);
    EXPECT_FALSE(cache.compile(program(n++)).hit);
  }
  expect_still_waiting(prefetch_, config_.dir, 4);  // 2 of the last run, p7 and p8
  prefetch_.stop();
  EXPECT_FALSE(prefetch_.running());
}

TEST(Prefetch, AtFirstMissItStartsAtOnceWhenAHeaderWasWrittenSinceTheLastRun) {
  // An edit as an editor makes it: the run's first test will miss; the prefetch does not wait
  // for that miss (no process of the run misses here) and compiles the suite for the new header.
  TempDir dir("prefetch-header-written");
  const ScopedEnv cli("CUBBY_CLI", CUBBY_CLI_PATH);
  const Config config = edited_store(dir.path(), 3, Edit::now);
  Prefetch prefetch;
  prefetch.start(config, PrefetchStart::at_first_miss);
  ASSERT_TRUE(prefetch.running()) << prefetch.note();
  EXPECT_TRUE(wait_until([&] { return testing::count_entries(DiskTier(config.dir)) == 6; }, 120s));
  prefetch.stop();
  Cache cache(config);
  for (int n = 0; n < 3; ++n)
    EXPECT_TRUE(cache.compile(reading_header(n, dir.path() / "include")).hit) << n;
}

TEST(Prefetch, AtFirstMissAHeaderTouchedButNotChangedStartsItOnceAndThenNoMore) {
  // A touch, a checkout back and forth, a reinstall: the header is newer than the suite's keys
  // file, but every key is the same. The first prefetch derives them, finds every entry, and
  // notes that; the next waits for a miss again instead of deriving keys beside every warm run.
  TempDir dir("prefetch-header-touched");
  const ScopedEnv cli("CUBBY_CLI", CUBBY_CLI_PATH);
  const Config config = edited_store(dir.path(), 2, Edit::touch);
  const fs::path keys = suite_keys_path(config.dir, config.suite);
  const fs::path header = dir.path() / "include" / "v.cuh";
  ASSERT_LT(fs::last_write_time(keys), fs::last_write_time(header));
  {
    Prefetch first;
    first.start(config, PrefetchStart::at_first_miss);
    ASSERT_TRUE(first.running()) << first.note();
    const auto pid = static_cast<pid_t>(first.pid());
    EXPECT_TRUE(wait_until([&] { return gone(pid); }, 60s));  // nothing to compile: it ends
  }
  EXPECT_GE(fs::last_write_time(keys), fs::last_write_time(header));
  EXPECT_EQ(testing::count_entries(DiskTier(config.dir)), 2);
  Prefetch next;
  next.start(config, PrefetchStart::at_first_miss);
  ASSERT_TRUE(next.running()) << next.note();
  std::this_thread::sleep_for(1500ms);
  EXPECT_FALSE(gone(static_cast<pid_t>(next.pid())));  // waiting for a miss
  EXPECT_TRUE(children_of(static_cast<pid_t>(next.pid())).empty());
}

TEST(Prefetch, AtFirstMissItStartsAtOnceWhenTheLastRunsEntriesAreGone) {
  // Cleared, collected or a new store: the run would miss at once; the prefetch does not wait.
  TempDir dir("prefetch-entries-gone");
  const ScopedEnv cli("CUBBY_CLI", CUBBY_CLI_PATH);
  Config config = recorded_store(dir.path(), 3);
  const fs::path miss = suite_miss_path(config.dir, config.suite);
  fs::last_write_time(miss, fs::file_time_type::clock::now() - 1h);
  Prefetch prefetch;
  prefetch.start(config, PrefetchStart::at_first_miss);
  ASSERT_TRUE(prefetch.running()) << prefetch.note();
  EXPECT_TRUE(wait_until([&] { return testing::count_entries(DiskTier(dir.path())) == 3; }, 120s));
}

TEST(Prefetch, AWorkerThatCrashesMeansTheRunCompilesThatKernelItself) {
  TempDir dir("prefetch-crash");
  const ScopedEnv cli("CUBBY_CLI", CUBBY_CLI_PATH);
  const ScopedEnv crash("CUBBY_TEST_WORKER_FAULT", "crash:p1.cu");
  const Config config = recorded_store(dir.path(), 3);
  Prefetch prefetch;
  prefetch.start(config);
  ASSERT_TRUE(prefetch.running()) << prefetch.note();
  Cache cache(config);
  for (int n = 0; n < 3; ++n) {
    const CacheResult result = cache.compile(program(n));  // the crash never reaches the run
    EXPECT_FALSE(result.entry->lowered_names.empty());
    // Every worker that takes p1 dies before compiling it: only this run compiles p1.
    if (n == 1) {
      EXPECT_FALSE(result.hit);
    }
  }
}

// A prefetch that is stopped without dying (SIGSTOP, a debugger) never holds up the end of the
// run that started it: stop() sends SIGTERM, which a stopped process does not act on, and after
// 5 s SIGKILL, which ends it stopped or not.
TEST(Prefetch, StopEndsAPrefetchThatIsStoppedWithinItsBound) {
  TempDir dir("prefetch-stopped");
  const ScopedEnv cli("CUBBY_CLI", CUBBY_CLI_PATH);
  const ScopedEnv hang("CUBBY_TEST_WORKER_FAULT", "hang:p0.cu");
  const Config config = recorded_store(dir.path(), 2);
  Prefetch prefetch;
  prefetch.start(config);
  ASSERT_TRUE(prefetch.running()) << prefetch.note();
  const auto pid = static_cast<pid_t>(prefetch.pid());
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  const auto start = std::chrono::steady_clock::now();
  prefetch.stop();
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(prefetch.running());
  EXPECT_LT(took, 15s) << "stop() waited for a stopped prefetch";
  EXPECT_NE(::kill(pid, 0), 0) << "the stopped prefetch outlived stop()";
}

TEST(Prefetch, DiesWithTheProcessThatStartedItEvenOnKill9) {
  TempDir dir("prefetch-orphans");
  const ScopedEnv cli("CUBBY_CLI", CUBBY_CLI_PATH);
  const ScopedEnv hang("CUBBY_TEST_WORKER_FAULT", "hang:p0.cu");  // a worker that never ends
  const Config config = recorded_store(dir.path(), 2);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t test_process = ::fork();
  if (test_process == 0) {  // a "test binary" that starts a prefetch and is then killed
    Prefetch prefetch;
    prefetch.start(config);
    const long pid = prefetch.pid();
    (void)!::write(pipe_fds[1], &pid, sizeof pid);
    for (;;) ::pause();
  }
  long coordinator = 0;
  ASSERT_EQ(::read(pipe_fds[0], &coordinator, sizeof coordinator),
            static_cast<ssize_t>(sizeof coordinator));
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  ASSERT_GT(coordinator, 0);
  std::set<pid_t> workers;
  EXPECT_TRUE(wait_until(
      [&] {
        workers = children_of(static_cast<pid_t>(coordinator));
        return !workers.empty();
      },
      60s));
  ::kill(test_process, SIGKILL);
  int status = 0;
  ::waitpid(test_process, &status, 0);
  EXPECT_TRUE(wait_until([&] { return gone(static_cast<pid_t>(coordinator)); }, 20s))
      << "the prefetch outlived the killed process";
  for (pid_t worker : workers) {
    EXPECT_TRUE(wait_until([&] { return gone(worker); }, 20s)) << "worker " << worker;
  }
}

// The nice value of a process (field 19 of /proc/<pid>/stat), or -100 when it cannot be read.
int nice_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return -100;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int n = 3; n <= 19 && fields >> field; ++n) {
    if (n == 19) return std::stoi(field);
  }
  return -100;
}

// A prefetch beside a warm run must not take the run's CPU: it and its workers run at nice 19.
TEST(Prefetch, ItAndItsWorkersRunAtTheLowestPriority) {
  TempDir dir("prefetch-nice");
  const ScopedEnv cli("CUBBY_CLI", CUBBY_CLI_PATH);
  const ScopedEnv hang("CUBBY_TEST_WORKER_FAULT", "hang:p0.cu");  // a worker that stays
  const Config config = recorded_store(dir.path(), 2);
  const int own = nice_of(::getpid());
  Prefetch prefetch;
  prefetch.start(config);
  ASSERT_TRUE(prefetch.running()) << prefetch.note();
  const auto coordinator = static_cast<pid_t>(prefetch.pid());
  std::set<pid_t> workers;
  ASSERT_TRUE(wait_until(
      [&] {
        workers = children_of(coordinator);
        return !workers.empty();
      },
      60s));
  EXPECT_EQ(nice_of(coordinator), 19);
  for (pid_t worker : workers) EXPECT_EQ(nice_of(worker), 19) << "worker " << worker;
  EXPECT_EQ(nice_of(::getpid()), own) << "the run keeps its own priority";
}

TEST(LocateCli, CubbyCliWinsAndMustBeAnExecutable) {
  TempDir dir("locate-cli");
  {
    const ScopedEnv cli("CUBBY_CLI", CUBBY_CLI_PATH);
    EXPECT_EQ(locate_cli(), fs::path(CUBBY_CLI_PATH));
  }
  testing::write_text(dir / "cubby", "not executable");
  const ScopedEnv cli("CUBBY_CLI", (dir / "cubby").string());
  EXPECT_TRUE(locate_cli().empty());
}

TEST(LocateCli, FindsTheBuildTreesToolWithoutCubbyCli) {
  const ScopedEnv cli("CUBBY_CLI", std::nullopt);
  const fs::path found = locate_cli();
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.filename(), "cubby");
}

}  // namespace
}  // namespace cubby
