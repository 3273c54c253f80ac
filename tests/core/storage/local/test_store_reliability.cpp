// The store under many processes and hostile conditions, end to end through the orchestrator:
// cross-process single flight, a multi-process stress run with kill -9, full disk (ENOSPC),
// read-only and permission-denied stores, group-shareable modes, size bound enforcement.
// Children are forked (no exec) and report through their exit status and pipes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cubby/cache.hpp"
#include "cubby/driver.hpp"
#include "cuda/nvrtc_library.hpp"
#include "small_tmpfs.hpp"
#include "storage/local/gc.hpp"
#include "storage/local/pch_dir.hpp"
#include "storage/local/store_stats.hpp"
#include "storage/local/verify.hpp"
#include "test_support.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::SmallTmpfs;
using testing::TempDir;

// Kernel `i` of a family of small, distinct programs (distinct keys).
CompileRequest kernel(int i) {
  CompileRequest r;
  r.source = "namespace ns { template <class T, int N> __global__ void k(T* p) { p[0] = T(N + " +
             std::to_string(i) + "); } }\n";
  r.program_name = "reliability_" + std::to_string(i) + ".cu";
  r.name_expressions = {"ns::k<float, 3>", "ns::k<int, 1 + 1>"};
  r.arch = "sm_90";
  return r;
}

Config config_for(const fs::path& dir) {
  Config config;
  config.dir = dir;
  return config;
}

// A store on a 1 MB file system cannot hold NVRTC's precompiled headers (about 100 MB each), and
// the PCH lock a process holds keeps the mount busy: such stores compile without PCH
// (FullDisk.APchThatCannotBeWrittenIsACompileWithoutIt covers PCH on a full disk).
bool api_supports_pch() {
  const auto& api = nvrtc_api();
  return api.ok() && api->supports_pch();
}

Config small_fs_config(const fs::path& dir) {
  Config config = config_for(dir);
  config.pch = false;
  return config;
}

// Whether `path` is in a store's tmp/ folder: the PCH folders of live processes (pch_dir.hpp),
// which stay until their process exits.
bool in_tmp(const fs::path& path) {
  return path.string().find("/tmp/pch.tmp.") != std::string::npos || path.filename() == "tmp";
}

// Runs `body` in a forked child; its return value is the child's exit code.
template <class Body>
pid_t spawn(Body body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int code = 1;
    try {
      code = body();
    } catch (...) {
      code = 3;
    }
    ::_exit(code);
  }
  return pid;
}

int exit_code(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

std::string read_pipe(int fd) {
  std::string out;
  char buffer[4096];
  ssize_t got = 0;
  while ((got = ::read(fd, buffer, sizeof buffer)) > 0)
    out.append(buffer, static_cast<std::size_t>(got));
  return out;
}

TEST(SingleFlight, EightColdProcessesCompileOnceAndAgreeOnNames) {
  TempDir dir("flight");
  constexpr int kProcesses = 8;
  std::vector<std::pair<pid_t, int>> children;
  for (int p = 0; p < kProcesses; ++p) {
    int out[2];
    ASSERT_EQ(::pipe(out), 0);
    const pid_t pid = spawn([&] {
      ::close(out[0]);
      Cache cache(config_for(dir.path()));
      const CacheResult result = cache.compile(kernel(0));
      std::string line;
      for (const auto& [expression, lowered] : result.entry->lowered_names) {
        line += expression + "=" + lowered + ";";
      }
      line += result.hit ? "hit\n" : "compiled\n";
      return ::write(out[1], line.data(), line.size()) == static_cast<ssize_t>(line.size()) ? 0 : 2;
    });
    ::close(out[1]);
    children.emplace_back(pid, out[0]);
  }
  std::set<std::string> names;
  int compiled = 0;
  for (const auto& [pid, fd] : children) {
    std::string line = read_pipe(fd);
    ::close(fd);
    EXPECT_EQ(exit_code(pid), 0);
    if (line.ends_with("compiled\n")) ++compiled;
    names.insert(line.substr(0, line.rfind(';')));
  }
  EXPECT_EQ(compiled, 1);
  EXPECT_EQ(names.size(), 1u) << "the processes disagree on lowered names";
  auto counters = StoreStats(dir.path()).read();
  ASSERT_TRUE(counters.ok());
  EXPECT_EQ((*counters)["compiles"], 1);
  EXPECT_EQ((*counters)["hits_disk"], kProcesses - 1);
  EXPECT_EQ((*counters)["store_entries"], 1);
  // Nothing is left behind: no lock files, no temp files (the children end with _exit, so the
  // PCH folder of the one that compiled is gc's to remove, as after a kill -9).
  EXPECT_LE(remove_dead_pch_dirs(dir.path()).folders, 1u);
  std::size_t leftovers = 0;
  for (const auto& item : fs::recursive_directory_iterator(dir.path())) {
    const std::string name = item.path().filename().string();
    if (name.ends_with(".lock") || name.find(".tmp.") != std::string::npos) ++leftovers;
  }
  EXPECT_EQ(leftovers, 0u);
}

// 8 processes x 250 mixed operations (compile/hit, whole-store gc, group trims, removals) over 20
// keys, 3 of them killed with SIGKILL at random moments. Afterwards: verify finds nothing bad,
// every surviving entry verifies and is served, and gc removes every leftover.
TEST(Stress, MixedOperationsWithKillNineLeaveAConsistentStore) {
  TempDir dir("stress");
  constexpr int kProcesses = 8;
  constexpr int kOperations = 250;
  constexpr int kKeys = 20;
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    children.push_back(spawn([&, p] {
      std::mt19937 random(seed + static_cast<unsigned>(p));
      Config config = config_for(dir.path());
      config.max_size = 14 * 6000;  // about 14 entries: writes trigger group trims
      config.memory_entries = 0;    // every lookup reads the store the others trim and remove
      Cache cache(config);
      DiskTier disk(config.dir);
      for (int op = 0; op < kOperations; ++op) {
        const int choice = static_cast<int>(random() % 100);
        const int i = static_cast<int>(random() % kKeys);
        if (choice < 85) {
          const CacheResult result = cache.compile(kernel(i));
          // Whatever tier served it, the names must be symbols of the CUBIN it came with.
          if (!verify_entry_symbols(*result.entry).ok()) return 10;
          if (result.entry->lowered_names.size() != 2) return 11;
        } else if (choice < 90) {
          GcOptions options;
          options.max_size = 10 * 6000;
          if (!collect_garbage(disk, options).ok()) return 12;
        } else if (choice < 95) {
          if (!disk.remove(cache.key_of(kernel(i))).ok()) return 13;
        } else {
          GcOptions options;
          options.max_size = 10 * 6000;
          options.wait_for_lock = false;
          if (!trim_group(disk, static_cast<unsigned>(i) % 16, options).ok()) return 14;
        }
      }
      return 0;
    }));
  }
  std::mt19937 random(seed);
  std::set<pid_t> killed;
  for (int k = 0; k < 3; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200 + random() % 1500));
    const pid_t victim = children[random() % children.size()];
    if (killed.insert(victim).second) ::kill(victim, SIGKILL);
  }
  for (const pid_t pid : children) {
    const int code = exit_code(pid);
    if (killed.contains(pid)) {
      EXPECT_TRUE(code == 0 || code == 128 + SIGKILL) << code;
    } else {
      EXPECT_EQ(code, 0) << "a surviving process saw an inconsistent store";
    }
  }

  DiskTier disk(dir.path());
  auto report = verify_store(disk, false, [](const DiskEntryInfo& info, const std::string& why) {
    ADD_FAILURE() << "bad entry " << info.key.hex() << ": " << why;
  });
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->bad, 0u);
  GcOptions options;
  options.max_size = 1ull << 30;
  options.temp_min_age = 0s;
  ASSERT_TRUE(collect_garbage(disk, options).ok());
  for (const auto& item : fs::recursive_directory_iterator(dir.path())) {
    const std::string name = item.path().filename().string();
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << item.path();
    EXPECT_FALSE(name.ends_with(".lock") && name != "gc.lock") << item.path();
  }
  // Every surviving entry is served as a disk hit with the right names, and loads on a GPU when
  // there is one (cuModuleLoadData + every name resolved).
  const bool gpu = gpu_status().ok();
  Cache cache(config_for(dir.path()));
  std::size_t served = 0;
  for (int i = 0; i < kKeys; ++i) {
    if (!fs::exists(DiskTier(cache.config().dir).path_of(cache.key_of(kernel(i))))) continue;
    const CacheResult result = cache.compile(kernel(i));
    EXPECT_EQ(result.tier, Source::disk);
    EXPECT_TRUE(verify_entry_symbols(*result.entry).ok());
    if (gpu) {
      Module module(result.entry);
      EXPECT_NE(module.function("ns::k<float, 3>"), nullptr);
      EXPECT_NE(module.function("ns::k<int, 1 + 1>"), nullptr);
    }
    ++served;
  }
  EXPECT_EQ(cache.stats().compiles, 0u);
  EXPECT_EQ(served, report->entries);
}

TEST(SizeBound, WritesOverTheBoundEvictAndGcRestoresTheBound) {
  TempDir dir("bound");
  Config config = config_for(dir.path());
  Cache probe(config);
  const std::uint64_t entry_size = probe.compile(kernel(0)).entry->payload.size();
  config.max_size = entry_size * 6;  // a few entries: every group's share is under one entry
  {
    Cache cache(config);
    for (int i = 0; i < 12; ++i) (void)cache.compile(kernel(i));
  }
  auto counters = StoreStats(dir.path()).read();
  ASSERT_TRUE(counters.ok());
  EXPECT_GT((*counters)["evictions"], 0);
  GcOptions options;
  options.max_size = config.max_size;
  auto report = collect_garbage(DiskTier(dir.path()), options);
  ASSERT_TRUE(report.ok());
  EXPECT_LE(report->bytes, config.max_size);
}

bool is_root() { return ::geteuid() == 0; }

// A real full disk: a 64 KiB tmpfs (root only; skipped otherwise, see FaultInjected below).
TEST(FullDisk, RealEnospcLeavesTheResultUsableAndReadsWorking) {
  TempDir dir("enospc");
  SmallTmpfs tmpfs(dir / "fs", "size=64k");
  if (!tmpfs.mounted()) GTEST_SKIP() << tmpfs.why_not();
  const fs::path& mount_point = tmpfs.path();
  {
    Config config = small_fs_config(mount_point / "store");
    Cache first(config);
    (void)first.compile(kernel(1));  // fits
    {
      // Fill the file system.
      std::string filler(4096, 'f');
      FILE* file = std::fopen((mount_point / "filler").c_str(), "wb");
      ASSERT_NE(file, nullptr);
      while (std::fwrite(filler.data(), 1, filler.size(), file) == filler.size()) {
      }
      std::fclose(file);
    }
    Cache cache(config);
    ::testing::internal::CaptureStderr();
    const CacheResult a = cache.compile(kernel(2));
    const CacheResult b = cache.compile(kernel(3));
    const std::string warnings = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(a.hit);
    EXPECT_EQ(a.entry->lowered_names.size(), 2u);
    EXPECT_TRUE(verify_entry_symbols(*b.entry).ok());
    EXPECT_EQ(cache.stats().failed_writes, 2u);
    EXPECT_NE(warnings.find("full"), std::string::npos) << warnings;
    EXPECT_EQ(warnings.find("cubby:"), warnings.rfind("cubby:")) << "warned twice: " << warnings;
    const CacheResult hit = cache.compile(kernel(1));  // reads keep working
    EXPECT_EQ(hit.tier, Source::disk);
  }
}

TEST(FullDisk, APchThatCannotBeWrittenIsACompileWithoutIt) {
  TempDir dir("pch-enospc");
  SmallTmpfs tmpfs(dir / "fs", "size=1m");
  if (!tmpfs.mounted()) GTEST_SKIP() << tmpfs.why_not();
  const fs::path& mount_point = tmpfs.path();
  {
    Cache cache(config_for(mount_point / "store"));  // PCH on (the default)
    ::testing::internal::CaptureStderr();
    const CacheResult first = cache.compile(kernel(11));
    const CacheResult second = cache.compile(kernel(12));
    const std::string warnings = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(verify_entry_symbols(*first.entry).ok());
    EXPECT_TRUE(verify_entry_symbols(*second.entry).ok());
    EXPECT_EQ(cache.stats().compiles, 2u);
    EXPECT_EQ(cache.stats().compile_failures, 0u);
    EXPECT_EQ(cache.stats().pch_created + cache.stats().pch_reused, 0u);
    if (api_supports_pch()) {
      EXPECT_NE(warnings.find("compiling without PCH"), std::string::npos) << warnings;
    }
  }
}

TEST(FullDisk, FaultInjectedEnospcLeavesTheResultUsable) {
  TempDir dir("enospc");
  Cache warm(config_for(dir.path()));
  (void)warm.compile(kernel(4));
  io::inject_write_failure(ENOSPC);
  Cache cache(config_for(dir.path()));
  const CacheResult result = cache.compile(kernel(5));
  io::inject_write_failure(0);
  EXPECT_FALSE(result.hit);
  EXPECT_TRUE(verify_entry_symbols(*result.entry).ok());
  EXPECT_EQ(cache.stats().failed_writes, 1u);
  EXPECT_EQ(cache.compile(kernel(4)).tier, Source::disk);
  // No temp file is left by the failed write.
  for (const auto& item : fs::recursive_directory_iterator(dir.path())) {
    if (in_tmp(item.path())) continue;
    EXPECT_EQ(item.path().filename().string().find(".tmp."), std::string::npos) << item.path();
  }
}

TEST(ReadOnlyStore, ARealReadOnlyMountServesHitsAndCountsFailedWrites) {
  TempDir dir("erofs");
  SmallTmpfs tmpfs(dir / "fs", "size=1m");
  if (!tmpfs.mounted()) GTEST_SKIP() << tmpfs.why_not();
  const fs::path& mount_point = tmpfs.path();
  { Cache(small_fs_config(mount_point)).compile(kernel(6)); }
  ASSERT_TRUE(tmpfs.make_read_only());
  {
    Cache cache(config_for(mount_point));
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(cache.compile(kernel(6)).tier, Source::disk);
    const CacheResult compiled = cache.compile(kernel(7));
    const std::string warnings = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(compiled.hit);
    EXPECT_TRUE(verify_entry_symbols(*compiled.entry).ok());
    EXPECT_EQ(cache.stats().failed_writes, 1u);
    EXPECT_NE(warnings.find("read-only"), std::string::npos) << warnings;
  }
}

// gc must write (its lock, the removals), and refuses CUBBY_READ_ONLY=1: on a read-only file
// system its message must not send the user there.
TEST(ReadOnlyStore, GcOnAReadOnlyMountGivesAdviceThatWorks) {
  TempDir dir("erofs-gc");
  SmallTmpfs tmpfs(dir / "fs", "size=1m");
  if (!tmpfs.mounted()) GTEST_SKIP() << tmpfs.why_not();
  const fs::path& mount_point = tmpfs.path();
  DiskTier disk(mount_point);
  ASSERT_TRUE(disk.put(Key{}, "entry").ok());
  ASSERT_TRUE(tmpfs.make_read_only());
  auto report = collect_garbage(disk, GcOptions{});
  ASSERT_FALSE(report.ok());
  const std::string& message = report.error().message;
  EXPECT_EQ(message.find("CUBBY_READ_ONLY"), std::string::npos) << message;
  EXPECT_NE(message.find("read-only"), std::string::npos) << message;
  EXPECT_NE(message.find("remount it read-write"), std::string::npos) << message;
}

TEST(PermissionDenied, AnotherUsersStoreServesHitsAndCompilesWithoutWriting) {
  TempDir dir("eacces");
  { Cache(config_for(dir.path())).compile(kernel(8)); }
  // The store belongs to this user with mode 0755: "nobody" (when root) or a chmod 0555 (else)
  // cannot write it.
  const bool root = is_root();
  if (!root) {
    for (const auto& item : fs::recursive_directory_iterator(dir.path())) {
      if (item.is_directory()) fs::permissions(item.path(), fs::perms(0555));
    }
    fs::permissions(dir.path(), fs::perms(0555));
  } else {
    for (const auto& item : fs::recursive_directory_iterator(dir.path())) {
      if (item.is_directory()) fs::permissions(item.path(), fs::perms(0755));
    }
    fs::permissions(dir.path(), fs::perms(0755));
    fs::permissions(dir.path().parent_path(), fs::perms::others_exec, fs::perm_options::add);
  }
  const pid_t child = spawn([&] {
    if (root && (::setgid(65534) != 0 || ::setuid(65534) != 0)) return 20;
    Cache cache(config_for(dir.path()));
    if (cache.compile(kernel(8)).tier != Source::disk) return 21;
    const CacheResult compiled = cache.compile(kernel(9));
    if (compiled.hit || !verify_entry_symbols(*compiled.entry).ok()) return 22;
    if (cache.stats().failed_writes != 1) return 23;
    return 0;
  });
  EXPECT_EQ(exit_code(child), 0);
  fs::permissions(dir.path(), fs::perms(0775));
  for (const auto& item : fs::recursive_directory_iterator(dir.path())) {
    if (item.is_directory()) fs::permissions(item.path(), fs::perms(0775));
  }
}

TEST(Sharing, EntriesLocksAndStatsAreGroupWritableWhateverTheUmask) {
  TempDir dir("share");
  const mode_t old = ::umask(077);
  {
    Cache cache(config_for(dir.path() / "store"));
    (void)cache.compile(kernel(10));
  }
  ::umask(old);
  for (const auto& item : fs::recursive_directory_iterator(dir.path() / "store")) {
    // NVRTC writes PCH files with its own mode: they are private to the process that made them,
    // and so are their folders (no one else can plant a link there: storage/local/pch_dir.hpp).
    if (item.path().extension() == ".pch") continue;
    struct stat info {};
    ASSERT_EQ(::stat(item.path().c_str(), &info), 0);
    if (item.path().string().find("/tmp/pch.tmp.") != std::string::npos && S_ISDIR(info.st_mode)) {
      EXPECT_EQ(info.st_mode & 0777, 0700u) << item.path();
    } else if (S_ISDIR(info.st_mode)) {
      EXPECT_EQ(info.st_mode & 07777, 02775u) << item.path();
    } else {
      EXPECT_EQ(info.st_mode & 0777, 0664u) << item.path();
    }
  }
}

TEST(Sharing, TheManifestsFolderThatASuitesFirstMissMakesIsGroupWritableWhateverTheUmask) {
  // A miss of a suite touches its miss file (a prefetch may wait for it) before anything else of
  // the store's manifests exists: the folder it makes is for every user of the store.
  TempDir dir("share-manifests");
  Config config = config_for(dir.path() / "store");
  config.suite = "s";
  const mode_t old = ::umask(077);
  {
    Cache cache(config);
    (void)cache.compile(kernel(11));
  }
  ::umask(old);
  struct stat info {};
  ASSERT_EQ(::stat((dir.path() / "store" / "manifests").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 02775u);
}

}  // namespace
}  // namespace cubby
