// The orchestrator end to end with real NVRTC: memory -> disk -> compile, self-repair, failing
// writes, single flight, and start-up without NVRTC.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "cubby/cache.hpp"
#include "cubby/cubin.hpp"
#include "cubby/entry.hpp"
#include "cuda/compile_hook.hpp"
#include "cuda/nvrtc_library.hpp"
#include "forked_owner.hpp"
#include "format/blob.hpp"
#include "key/include_scan.hpp"
#include "storage/local/disk.hpp"
#include "storage/local/lock.hpp"
#include "storage/local/manifests.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using testing::count_entries;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

constexpr const char* kSource = R"(
namespace ns {
template <class T, int N> __global__ void fill(T* out) { out[threadIdx.x] = T(N); }
template <class T> __device__ T table[4] = {T(1), T(2), T(3), T(4)};
inline namespace v2 {
template <class T, int N> __global__ void k(T* out) { out[0] = T(N); }
}
}
)";

bool compile_nvrtc_supports_pch() {
  const auto& api = nvrtc_api();
  return api.ok() && api->supports_pch();
}

CompileRequest request() {
  CompileRequest r;
  r.source = kSource;
  r.program_name = "cache_test.cu";
  r.name_expressions = {"ns::fill<float, 3>", "ns::fill<int, 1 + 1>", "&ns::table<double>",
                        "ns::k<float, 256>", "ns::v2::k<float,256>"};
  r.arch = "sm_90";
  return r;
}

Config config_for(const std::filesystem::path& dir) {
  Config config;
  config.dir = dir;
  return config;
}

TEST(Cache, ColdThenMemoryThenDiskReturnTheSameNames) {
  TempDir dir("cache");
  Cache cold(config_for(dir.path()));
  const CacheResult first = cold.compile(request());
  EXPECT_FALSE(first.hit);
  EXPECT_EQ(first.tier, Source::compiled);
  ASSERT_EQ(first.entry->lowered_names.size(), 5u);
  EXPECT_EQ(first.lowered_name("ns::k<float, 256>"), first.lowered_name("ns::v2::k<float,256>"));
  EXPECT_GT(first.entry->compile_us, 0u);

  const CacheResult again = cold.compile(request());
  EXPECT_TRUE(again.hit);
  EXPECT_EQ(again.tier, Source::memory);
  EXPECT_EQ(again.key, first.key);

  Cache warm(config_for(dir.path()));  // a fresh memory tier: served by disk
  const CacheResult disk = warm.compile(request());
  EXPECT_TRUE(disk.hit);
  EXPECT_EQ(disk.tier, Source::disk);
  EXPECT_EQ(disk.key, first.key);
  EXPECT_EQ(disk.entry->lowered_names, first.entry->lowered_names);
  EXPECT_EQ(disk.entry->payload, first.entry->payload);
  EXPECT_EQ(disk.entry->compile_us, first.entry->compile_us);

  const Stats cold_stats = cold.stats();
  EXPECT_EQ(cold_stats.compiles, 1u);
  EXPECT_EQ(cold_stats.misses, 1u);
  EXPECT_EQ(cold_stats.hits_memory, 1u);
  const Stats warm_stats = warm.stats();
  EXPECT_EQ(warm_stats.compiles, 0u);
  EXPECT_EQ(warm_stats.hits_disk, 1u);
  EXPECT_GT(warm_stats.bytes_read, first.entry->payload.size());
  EXPECT_DOUBLE_EQ(warm_stats.compile_ms_saved,
                   static_cast<double>(first.entry->compile_us) / 1000.0);
}

// A project checked out under `root`: a source that includes a header through -I<root>/include.
CompileRequest checkout_request(const std::filesystem::path& root) {
  write_text(root / "include" / "ops.cuh",
             "#pragma once\ntemplate <class T> __device__ T twice(T v) { return v + v; }\n");
  CompileRequest r;
  r.source = "#include <ops.cuh>\ntemplate <class T> __global__ void k(T* p) { *p = twice(*p); }\n";
  r.program_name = (root / "tests" / "kernel.cu").string();
  r.source_dir = root / "tests";
  r.options = {"-I" + (root / "include").string()};
  r.name_expressions = {"k<float>"};
  r.arch = "sm_90";
  return r;
}

TEST(Cache, CheckoutsInOtherFoldersShareEntriesWithABaseDir) {
  TempDir dir("cache");
  const auto store = dir / "store";
  Config a_config = config_for(store);
  a_config.base_dir = dir / "runner-a" / "repo";
  Config b_config = config_for(store);
  b_config.base_dir = dir / "runner-b" / "repo";
  const CompileRequest a_request = checkout_request(a_config.base_dir);
  const CompileRequest b_request = checkout_request(b_config.base_dir);
  const CacheResult a = Cache(a_config).compile(a_request);
  EXPECT_EQ(a.tier, Source::compiled);
  const CacheResult b = Cache(b_config).compile(b_request);
  EXPECT_EQ(b.tier, Source::disk);  // the other checkout's entry
  EXPECT_EQ(b.key, a.key);
  EXPECT_EQ(b.entry->lowered_names, a.entry->lowered_names);
  // Without a base the paths differ, and so do the keys.
  EXPECT_NE(Cache(config_for(store)).key_of(b_request), a.key);
  // A header edited in one checkout is its own key there.
  write_text(b_config.base_dir / "include" / "ops.cuh",
             "#pragma once\ntemplate <class T> __device__ T twice(T v) { return 2 * v; }\n");
  EXPECT_NE(Cache(b_config).key_of(b_request), a.key);
}

// Each Cache keeps its header scans' files in its own store, however many Caches a process has
// (the scan's place was process-wide: the last Cache made decided for all).
TEST(Cache, TwoCachesOnTwoStoresKeepTheirScanFilesApart) {
  TempDir dir("cache-two-stores");
  write_text(dir.path() / "inc" / "user.h", "#pragma once\n");  // a non-empty include path
  Cache first(config_for(dir.path() / "first"));
  Cache second(config_for(dir.path() / "second"));
  CompileRequest r = request();
  r.source = "#include <cuda/std/cstddef>\n" + r.source;
  r.options = {"-I" + (dir.path() / "inc").string()};
  forget_header_scans();  // as in a new process: the toolkit's names are looked for and kept
  (void)first.key_of(r);
  forget_header_scans();
  const auto kept = [](const std::filesystem::path& store) {
    std::size_t names = 0;
    std::error_code ec;
    for (const auto& item : std::filesystem::directory_iterator(store / "tmp", ec)) {
      names += item.path().filename().string().starts_with("toolkit-names-") ? 1 : 0;
    }
    return names;
  };
  EXPECT_EQ(kept(dir.path() / "first"), 1u);
  EXPECT_EQ(kept(dir.path() / "second"), 0u);
}

TEST(Cache, NameExpressionOrderAndDuplicatesShareAnEntry) {
  TempDir dir("cache");
  Cache cache(config_for(dir.path()));
  const CacheResult first = cache.compile(request());
  CompileRequest shuffled = request();
  std::reverse(shuffled.name_expressions.begin(), shuffled.name_expressions.end());
  shuffled.name_expressions.push_back("ns::fill<float, 3>");
  const CacheResult second = cache.compile(shuffled);
  EXPECT_TRUE(second.hit);
  EXPECT_EQ(second.key, first.key);
}

TEST(Cache, KeyOfMatchesCompileWithoutCompiling) {
  TempDir dir("cache");
  Cache cache(config_for(dir.path()));
  const Key key = cache.key_of(request());
  EXPECT_EQ(cache.stats().compiles, 0u);
  EXPECT_EQ(cache.compile(request()).key, key);
}

TEST(Cache, UnknownNameExpressionThrowsNameNotFound) {
  TempDir dir("cache");
  Cache cache(config_for(dir.path()));
  const CacheResult result = cache.compile(request());
  try {
    (void)result.lowered_name("ns::fill<double, 3>");
    FAIL() << "expected cubby::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), Errc::name_not_found);
  }
}

TEST(Cache, CorruptEntryIsCountedRemovedAndRecompiled) {
  TempDir dir("cache");
  Key key;
  std::string original_payload;
  {
    Cache cache(config_for(dir.path()));
    const CacheResult result = cache.compile(request());
    key = result.key;
    original_payload = result.entry->payload;
  }
  DiskTier disk(dir.path());
  const auto path = disk.path_of(key);
  std::string bytes = read_text(path);
  ASSERT_GT(bytes.size(), 100u);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5a);
  write_text(path, bytes);

  Cache cache(config_for(dir.path()));
  const CacheResult result = cache.compile(request());
  EXPECT_FALSE(result.hit);
  EXPECT_EQ(cache.stats().corrupt, 1u);
  EXPECT_EQ(cache.stats().compiles, 1u);
  // Repaired: the stored entry decodes again and the next fresh cache hits it.
  ASSERT_TRUE(decode_entry(read_text(path), key).ok());
  Cache after(config_for(dir.path()));
  EXPECT_EQ(after.compile(request()).tier, Source::disk);
}

TEST(Cache, TruncatedEntryIsAMiss) {
  TempDir dir("cache");
  Key key;
  {
    Cache cache(config_for(dir.path()));
    key = cache.compile(request()).key;
  }
  DiskTier disk(dir.path());
  const std::string bytes = read_text(disk.path_of(key));
  write_text(disk.path_of(key), bytes.substr(0, bytes.size() - 7));
  Cache cache(config_for(dir.path()));
  EXPECT_EQ(cache.compile(request()).tier, Source::compiled);
  EXPECT_EQ(cache.stats().corrupt, 1u);
}

// Another program with the same name expressions (so its entry passes every name check for
// request()): a different kernel, a different key.
CompileRequest other_request() {
  CompileRequest r = request();
  const std::string body = "out[threadIdx.x] = T(N);";
  r.source.replace(r.source.find(body), body.size(), "out[threadIdx.x] = T(N + 1);");
  return r;
}

TEST(Cache, AnEntryCopiedOrLinkedToAnotherKeysFileIsNeverServedForIt) {
  namespace fs = std::filesystem;
  TempDir dir("cache");
  Key key;
  Key other_key;
  std::string other_payload;
  {
    Cache cache(config_for(dir.path()));
    key = cache.compile(request()).key;
    const CacheResult other = cache.compile(other_request());
    other_key = other.key;
    other_payload = other.entry->payload;
  }
  ASSERT_NE(key, other_key);
  DiskTier disk(dir.path());
  const std::string other_bytes = read_text(disk.path_of(other_key));
  for (const std::string how : {"copy", "hard link", "symbolic link"}) {
    SCOPED_TRACE(how);
    fs::remove(disk.path_of(key));
    if (how == "copy") fs::copy_file(disk.path_of(other_key), disk.path_of(key));
    if (how == "hard link") fs::create_hard_link(disk.path_of(other_key), disk.path_of(key));
    if (how == "symbolic link") fs::create_symlink(disk.path_of(other_key), disk.path_of(key));
    Cache cache(config_for(dir.path()));
    const CacheResult result = cache.compile(request());
    EXPECT_EQ(result.tier, Source::compiled);
    EXPECT_NE(result.entry->payload, other_payload);
    // A copy or hard link reads as the other key's bytes, a link is never followed: a counted
    // corrupt entry either way, replaced.
    EXPECT_EQ(cache.stats().corrupt, 1u);
    EXPECT_EQ(read_text(disk.path_of(other_key)), other_bytes);  // the other key's entry is intact
    Cache after(config_for(dir.path()));
    EXPECT_EQ(after.compile(request()).tier, Source::disk);
    EXPECT_NE(after.compile(request()).entry->payload, other_payload);
  }
}

// A FIFO or a link to /dev/zero at an entry path (a program's or a blob's) is never read (no
// hang, no unbounded read): a counted bad entry, removed, and the compile or save replaces it.
TEST(Cache, AFifoOrDeviceLinkAtAnEntryPathIsACountedBadEntryThatIsReplaced) {
  namespace fs = std::filesystem;
  TempDir dir("cache");
  DiskTier disk(dir.path());
  const Key key = Cache(config_for(dir.path())).key_of(request());
  const Key blob = blob_key("ns", "planted");
  for (const std::string how : {"fifo", "/dev/zero"}) {
    SCOPED_TRACE(how);
    for (const Key& planted : {key, blob}) {
      fs::create_directories(disk.path_of(planted).parent_path());
      fs::remove(disk.path_of(planted));
      if (how == "fifo") {
        ASSERT_EQ(::mkfifo(disk.path_of(planted).c_str(), 0644), 0);
      } else {
        fs::create_symlink("/dev/zero", disk.path_of(planted));
      }
    }
    Cache cache(config_for(dir.path()));
    EXPECT_EQ(cache.compile(request()).tier, Source::compiled);
    EXPECT_FALSE(cache.load_blob("ns", "planted"));
    EXPECT_EQ(cache.stats().corrupt, 2u);
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(disk.path_of(key))));  // the compile's
    EXPECT_FALSE(fs::exists(fs::symlink_status(disk.path_of(blob))));         // removed
    (void)cache.store_blob("ns", "planted", "payload", 0);
    EXPECT_EQ(Cache(config_for(dir.path())).load_blob("ns", "planted")->entry->payload, "payload");
  }
}

// What a store upgraded from format version 1 holds: an entry without a key.
std::string version_1_entry() {
  return read_text(std::filesystem::path(CUBBY_TEST_DATA_DIR) / "golden/entry_v1_basic.bin");
}

TEST(Cache, AnEntryOfAnOlderFormatIsAQuietMissThatIsReplaced) {
  TempDir dir("cache");
  const Key key = Cache(config_for(dir.path())).key_of(request());
  ASSERT_FALSE(version_1_entry().empty());
  write_text(DiskTier(dir.path()).path_of(key), version_1_entry());
  Cache cache(config_for(dir.path()));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(cache.compile(request()).tier, Source::compiled);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // a miss, not an error
  EXPECT_EQ(cache.stats().corrupt, 0u);
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(Cache(config_for(dir.path())).compile(request()).tier, Source::disk);
}

TEST(Cache, ABlobOfAnOlderFormatIsAQuietMissAndAnotherBlobsEntryIsCorrupt) {
  TempDir dir("cache");
  DiskTier disk(dir.path());
  // Blob keys do not depend on the format version: an upgraded store holds version 1 blobs.
  write_text(disk.path_of(blob_key("ns", "old")), version_1_entry());
  Cache cache(config_for(dir.path()));
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load_blob("ns", "old"));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(cache.stats().corrupt, 0u);
  (void)cache.store_blob("ns", "old", "new payload", 0);
  EXPECT_EQ(Cache(config_for(dir.path())).load_blob("ns", "old")->entry->payload, "new payload");
  // Blob "a"'s file copied to blob "b"'s place is not served as "b".
  (void)cache.store_blob("ns", "a", "payload of a", 0);
  write_text(disk.path_of(blob_key("ns", "b")), read_text(disk.path_of(blob_key("ns", "a"))));
  Cache fresh(config_for(dir.path()));
  EXPECT_FALSE(fresh.load_blob("ns", "b"));
  EXPECT_EQ(fresh.stats().corrupt, 1u);
}

TEST(Cache, EntryWhoseNamesAreNotInItsCubinIsNeverServed) {
  TempDir dir("cache");
  Key key;
  Entry doctored;
  {
    Cache cache(config_for(dir.path()));
    const CacheResult result = cache.compile(request());
    key = result.key;
    doctored = *result.entry;
  }
  // A well-formed entry (valid checksum) whose map points at a symbol the CUBIN lacks.
  doctored.lowered_names["ns::fill<float, 3>"] = "_Z9not_there";
  DiskTier disk(dir.path());
  ASSERT_TRUE(disk.put(key, encode_entry(key, doctored)).ok());

  Cache cache(config_for(dir.path()));
  const CacheResult result = cache.compile(request());
  EXPECT_EQ(result.tier, Source::compiled);
  EXPECT_NE(result.lowered_name("ns::fill<float, 3>"), "_Z9not_there");
  EXPECT_EQ(cache.stats().corrupt, 1u);
}

TEST(Cache, ATrailingIncludeOptionWithoutItsValueIsRefusedAndNothingIsStored) {
  TempDir dir("cache");
  Cache cache(config_for(dir.path()));
  for (const char* option : {"-include", "-I"}) {
    CompileRequest r = request();
    r.options = {"-std=c++17", option};
    try {
      (void)cache.compile(r);
      ADD_FAILURE() << option << " was compiled";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), Errc::invalid_argument);
      EXPECT_NE(std::string(error.what()).find("takes a value and has none"), std::string::npos)
          << error.what();
    }
  }
  EXPECT_EQ(cache.stats().compiles, 0u);
  EXPECT_EQ(count_entries(DiskTier(dir.path())), 0u);
}

TEST(Cache, CompileErrorThrowsWithLogAndStoresNothing) {
  TempDir dir("cache");
  Cache cache(config_for(dir.path()));
  CompileRequest bad = request();
  bad.source = "__global__ void broken() { this_is_not_declared = 1; }";
  bad.name_expressions = {"broken"};
  try {
    (void)cache.compile(bad);
    FAIL() << "expected a compile error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), Errc::compile_failed);
    EXPECT_NE(std::string(error.what()).find("this_is_not_declared"), std::string::npos);
  }
  EXPECT_EQ(count_entries(DiskTier(cache.config().dir)), 0u);
  EXPECT_EQ(cache.stats().compile_failures, 1u);
}

TEST(Cache, UnwritableStoreLeavesTheResultUsable) {
  TempDir dir("cache");
  write_text(dir / "file", "not a folder");
  Cache cache(config_for(dir / "file" / "store"));  // its parent is a regular file
  const CacheResult result = cache.compile(request());
  EXPECT_EQ(result.tier, Source::compiled);
  EXPECT_FALSE(result.entry->payload.empty());
  EXPECT_EQ(cache.stats().failed_writes, 1u);
  EXPECT_EQ(cache.compile(request()).tier, Source::memory);  // still served from memory
}

TEST(Cache, ReadOnlyStoreIsReadButNeverWritten) {
  TempDir dir("cache");
  {
    Cache cache(config_for(dir.path()));
    (void)cache.compile(request());
  }
  Config config = config_for(dir.path());
  config.read_only = true;
  Cache cache(config);
  EXPECT_EQ(cache.compile(request()).tier, Source::disk);
  CompileRequest other = request();
  other.name_expressions = {"ns::fill<double, 5>"};
  EXPECT_EQ(cache.compile(other).tier, Source::compiled);
  EXPECT_EQ(count_entries(DiskTier(cache.config().dir)), 1u);
  EXPECT_EQ(cache.stats().failed_writes, 0u);
}

TEST(Cache, DisabledAlwaysCompilesAndWritesNothing) {
  TempDir dir("cache");
  Config config = config_for(dir.path());
  config.disabled = true;
  Cache cache(config);
  CompileRequest small = request();
  small.name_expressions = {"ns::fill<float, 3>"};
  EXPECT_EQ(cache.compile(small).tier, Source::compiled);
  EXPECT_EQ(cache.compile(small).tier, Source::compiled);
  EXPECT_EQ(cache.stats().compiles, 2u);
  EXPECT_FALSE(std::filesystem::exists(dir / "entries"));
}

TEST(Cache, ConcurrentCallersOfOneKeyCompileOnce) {
  TempDir dir("cache");
  Cache cache(config_for(dir.path()));
  std::vector<std::thread> threads;
  std::vector<Key> keys(4);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    threads.emplace_back([&, i] { keys[i] = cache.compile(request()).key; });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(cache.stats().compiles, 1u);
  EXPECT_EQ(cache.stats().hits_memory, 3u);
  EXPECT_EQ(std::set<Key>(keys.begin(), keys.end()).size(), 1u);
}

// A process stopped while it holds a key's compile lock (SIGSTOP, a debugger, a frozen VM): its
// flock stays, and a waiter once waited 5 minutes for it. The waiter sees the lock's heartbeat
// stop and compiles the kernel itself (within kStoppedHolder, 10 s), counted and said once.
TEST(Cache, AWaiterCompilesItselfWhenTheProcessCompilingItsKeyIsStopped) {
  TempDir dir("cache");
  const Key key = Cache(config_for(dir.path())).key_of(request());
  const pid_t child =
      testing::hold_lock_in_child(DiskTier(dir.path()).lock_path_of(key), std::chrono::minutes(2));
  ASSERT_GT(child, 0);
  ASSERT_EQ(::kill(child, SIGSTOP), 0);
  Cache cache(config_for(dir.path()));
  const auto start = std::chrono::steady_clock::now();
  const CacheResult result = cache.compile(request());
  const auto took = std::chrono::steady_clock::now() - start;
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(result.tier, Source::compiled);
  EXPECT_EQ(result.key, key);
  EXPECT_EQ(cache.stats().waits_given_up, 1u);
  EXPECT_EQ(cache.stats().compiles, 1u);
  EXPECT_LT(took, std::chrono::seconds(60)) << "the waiter waited for a stopped process";
  // What it compiled is stored: the next process is served without any wait.
  Cache next(config_for(dir.path()));
  EXPECT_EQ(next.compile(request()).tier, Source::disk);
}

TEST(Cache, EditingAHeaderReachedThroughIncludePathRecompiles) {
  TempDir dir("cache");
  write_text(dir / "inc" / "value.cuh", "#define VALUE 3\n");
  CompileRequest r;
  r.source =
      "#include \"value.cuh\"\ntemplate <int N> __global__ void k(int* o) { *o = N + VALUE; }\n";
  r.name_expressions = {"k<1>"};
  r.options = {"-I" + (dir / "inc").string()};
  r.arch = "sm_90";
  Cache cache(config_for(dir / "store"));
  const Key first = cache.compile(r).key;
  EXPECT_EQ(cache.compile(r).tier, Source::memory);  // untouched header: same key
  write_text(dir / "inc" / "value.cuh", "#define VALUE 42\n");
  const CacheResult edited = cache.compile(r);
  EXPECT_NE(edited.key, first);
  EXPECT_EQ(edited.tier, Source::compiled);
}

// A computed include built from a macro the scan does not know (CCCL_VERSION comes from a toolkit
// header, which the scan does not read) expanded to "cfg_CCCL_VERSION.cuh", a name of no file,
// taken for a toolkit header: the user header NVRTC really read was never keyed, and its edit
// served the old kernel. An expansion that names no file covers the folder trees instead.
TEST(Cache, AComputedIncludeOfAMacroTheScanDoesNotKnowKeysTheFoldersItMayRead) {
  TempDir dir("cache");
  CompileRequest r;
  r.source =
      "#include <cuda/std/version>\n#define CAT_(a, b) a##b\n#define CAT(a, b) CAT_(a, b)\n"
      "#define XS_(x) #x\n#define XS(x) XS_(x)\n#include XS(CAT(cfg_, CCCL_VERSION).cuh)\n"
      "__device__ int value = VALUE;\n";
  r.options = {"-I" + (dir / "inc").string()};
  r.arch = "sm_90";
  Cache cache(config_for(dir / "store"));
  std::string name;  // the header NVRTC looks for, from its error without one
  try {
    (void)cache.compile(r);
  } catch (const Error& error) {
    const std::string log = error.what();
    const std::size_t at = log.find("\"cfg_");
    if (at != std::string::npos) name = log.substr(at + 1, log.find('"', at + 1) - at - 1);
  }
  ASSERT_TRUE(name.starts_with("cfg_") && name.ends_with(".cuh")) << name;
  write_text(dir / "inc" / name, "#define VALUE 3\n");
  const CacheResult first = cache.compile(r);
  write_text(dir / "inc" / name, "#define VALUE 42\n");
  const CacheResult edited = cache.compile(r);
  EXPECT_NE(edited.key, first.key) << "an edit of the header NVRTC read kept the key";
  EXPECT_EQ(edited.tier, Source::compiled);
}

TEST(Cache, PreIncludedFileIsPartOfTheKey) {
  TempDir dir("cache");
  write_text(dir / "pre.cuh", "#define VALUE 3\n");
  CompileRequest r;
  r.source = "template <int N> __global__ void k(int* o) { *o = N + VALUE; }\n";
  r.name_expressions = {"k<1>"};
  r.options = {"--pre-include=" + (dir / "pre.cuh").string()};
  r.arch = "sm_90";
  Cache cache(config_for(dir / "store"));
  const Key first = cache.key_of(r);
  write_text(dir / "pre.cuh", "#define VALUE 4\n");
  EXPECT_NE(cache.key_of(r), first);
}

TEST(Cache, ForeignFilesInTheStoreAreIgnored) {
  TempDir dir("cache");
  write_text(dir / "entries" / "zz" / "README.txt", "hello");
  write_text(dir / "notes.md", "team notes");
  Cache cache(config_for(dir.path()));
  EXPECT_EQ(cache.compile(request()).tier, Source::compiled);
  Cache again(config_for(dir.path()));
  EXPECT_EQ(again.compile(request()).tier, Source::disk);
  EXPECT_TRUE(std::filesystem::exists(dir / "notes.md"));
}

TEST(Cache, PtxForVirtualArch) {
  TempDir dir("cache");
  CompileRequest r = request();
  r.arch = "compute_90";
  Cache cache(config_for(dir.path()));
  const CacheResult result = cache.compile(r);
  EXPECT_EQ(result.entry->kind, PayloadKind::ptx);
  Cache again(config_for(dir.path()));
  const CacheResult hit = again.compile(r);
  EXPECT_EQ(hit.tier, Source::disk);
  EXPECT_EQ(hit.entry->lowered_names, result.entry->lowered_names);
}

// Start-up contract: opening the store and the first hit in a fresh process load no NVRTC.
// The child half runs in a fresh process (re-executed test binary) and checks its own maps.
TEST(CacheStartup, ChildHitsWithoutLoadingNvrtc) {
  const char* store = std::getenv("CUBBY_TEST_STARTUP_STORE");
  if (store == nullptr) GTEST_SKIP() << "runs only as the child of FirstHitLoadsNoNvrtc";
  Cache cache(config_for(store));
  const CacheResult result = cache.compile(request());
  EXPECT_EQ(result.tier, Source::disk);
  const std::string maps = read_text("/proc/self/maps");
  EXPECT_EQ(maps.find("libnvrtc"), std::string::npos) << "NVRTC was loaded on the hit path";
}

TEST(CacheStartup, FirstHitLoadsNoNvrtc) {
  TempDir dir("cache");
  {
    Cache cache(config_for(dir.path()));
    (void)cache.compile(request());
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::setenv("CUBBY_TEST_STARTUP_STORE", dir.path().c_str(), 1);
    ::execl("/proc/self/exe", "test_cache",
            "--gtest_filter=CacheStartup.ChildHitsWithoutLoadingNvrtc",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's hit failed or loaded NVRTC (see its output)";
}

// A small mdspan program with kernel k<n> (the heavy header is what a PCH saves).
CompileRequest mdspan_program(int n, const std::string& header_dir = {}) {
  CompileRequest r;
  r.source = "#include <cuda/std/mdspan>\n" +
             std::string(header_dir.empty() ? "" : "#include \"value.cuh\"\n") +
             "template <class T> __global__ void k" + std::to_string(n) +
             "(T* p) { cuda::std::mdspan<T, cuda::std::extents<int, 4, " + std::to_string(n + 2) +
             ">> m(p); m(0, 0) = T(" + (header_dir.empty() ? std::to_string(n) : "kValue") +
             "); }\n";
  r.program_name = "pch_cache_" + std::to_string(n) + ".cu";
  r.name_expressions = {"k" + std::to_string(n) + "<int>"};
  r.options = {"-std=c++17"};
  if (!header_dir.empty()) r.options.push_back("-I" + header_dir);
  r.arch = "compute_90";  // PTX: the value a kernel stores can be read
  return r;
}

std::size_t pch_folders_in(const std::filesystem::path& store) {
  std::size_t count = 0;
  std::error_code error;
  for (const auto& item : std::filesystem::directory_iterator(store / "tmp", error)) {
    if (item.is_directory() && item.path().filename().string().starts_with("pch.tmp.")) ++count;
  }
  return count;
}

TEST(CachePch, TheSecondCompileSavesAPchAndLaterOnesReuseIt) {
  if (!compile_nvrtc_supports_pch()) GTEST_SKIP() << "NVRTC without PCH (before 12.8)";
  TempDir dir("cache-pch");
  Cache cache(config_for(dir.path()));
  (void)cache.compile(mdspan_program(1));  // no PCH: maybe the process's only compile
  EXPECT_EQ(cache.stats().pch_created, 0u);
  (void)cache.compile(mdspan_program(2));  // saves it
  (void)cache.compile(mdspan_program(3));  // reuse it
  (void)cache.compile(mdspan_program(4));
  EXPECT_EQ(cache.stats().pch_created, 1u);
  EXPECT_EQ(cache.stats().pch_reused, 2u);
  EXPECT_EQ(pch_folders_in(dir.path()), 1u);  // this process's, under tmp/
  Config off = config_for(dir.path() / "off");
  off.pch = false;
  Cache without(off);
  (void)without.compile(mdspan_program(1));
  (void)without.compile(mdspan_program(2));
  (void)without.compile(mdspan_program(3));
  EXPECT_EQ(without.stats().pch_created + without.stats().pch_reused, 0u);
  EXPECT_EQ(pch_folders_in(dir.path() / "off"), 0u);
}

TEST(CachePch, EagerSavesThePchFromTheFirstCompile) {
  if (!compile_nvrtc_supports_pch()) GTEST_SKIP() << "NVRTC without PCH (before 12.8)";
  TempDir dir("cache-pch-eager");
  Config config = config_for(dir.path());
  config.pch_eager = true;
  Cache cache(config);
  (void)cache.compile(mdspan_program(1));
  EXPECT_EQ(cache.stats().pch_created, 1u);
  (void)cache.compile(mdspan_program(2));
  EXPECT_EQ(cache.stats().pch_reused, 1u);
}

TEST(CachePch, AHeaderEditIsNeverServedFromAStalePch) {
  // NVRTC's own PCH check goes by file times: an edit within the same second kept the old header
  // in the PCH. cubby keeps a PCH per header contents, so the edit is always compiled.
  if (!compile_nvrtc_supports_pch()) GTEST_SKIP() << "NVRTC without PCH (before 12.8)";
  TempDir dir("cache-pch-edit");
  const std::filesystem::path headers = dir.path() / "include";
  std::filesystem::create_directories(headers);
  Cache cache(config_for(dir.path() / "store"));
  for (int value : {111, 222, 333}) {
    write_text(headers / "value.cuh", "constexpr int kValue = " + std::to_string(value) + ";\n");
    for (int n : {5, 6, 7}) {  // without, saves, reuses
      const CacheResult result = cache.compile(mdspan_program(n, headers.string()));
      EXPECT_NE(result.entry->payload.find(std::to_string(value)), std::string::npos)
          << "kernel " << n << " compiled from a stale header (wanted " << value << ")";
    }
  }
  EXPECT_EQ(cache.stats().pch_created, 3u);  // one per header version (the path holds "pch":
  EXPECT_EQ(cache.stats().pch_reused, 3u);   // an -I value is not a PCH option)
}

// Sets a compile hook for the scope (a test seam between key derivation and NVRTC's compile).
class HookGuard {
 public:
  explicit HookGuard(CompileHook hook) { set_compile_hook_for_testing(std::move(hook)); }
  ~HookGuard() { set_compile_hook_for_testing({}); }
  HookGuard(const HookGuard&) = delete;
  HookGuard& operator=(const HookGuard&) = delete;
};

// Issue 23: the key was derived before NVRTC read the header; an edit in between stored the new
// code under the old contents' key, served after the header was reverted.
TEST(Cache, AHeaderEditedDuringTheCompileIsReturnedButNeverStored) {
  TempDir dir("cache-edit-during");
  const std::filesystem::path value = dir / "inc" / "value.cuh";
  write_text(value, "constexpr int kValue = 1001;\n");
  CompileRequest r;
  r.source = "#include \"value.cuh\"\n__global__ void k(int* o) { *o = kValue; }\n";
  r.name_expressions = {"k"};
  r.options = {"-I" + (dir / "inc").string()};
  r.arch = "compute_90";
  bool edited = false;
  {
    HookGuard hook([&](const CompileRequest&) {
      if (!edited) write_text(value, "constexpr int kValue = 2002; // edited while compiling\n");
      edited = true;
    });
    Cache cache(config_for(dir / "store"));
    const CacheResult during = cache.compile(r);
    EXPECT_NE(during.entry->payload.find("2002"), std::string::npos);  // what NVRTC compiled
    EXPECT_EQ(cache.stats().headers_changed, 1u);
  }
  ASSERT_TRUE(edited);
  write_text(value, "constexpr int kValue = 1001;\n");  // reverted: the first key again
  Cache fresh(config_for(dir / "store"));
  const CacheResult after = fresh.compile(r);
  EXPECT_EQ(after.tier, Source::compiled);
  EXPECT_NE(after.entry->payload.find("1001"), std::string::npos) << after.entry->payload;
  EXPECT_EQ(fresh.stats().headers_changed, 0u);
  EXPECT_EQ(fresh.compile(r).tier, Source::memory);  // stored as usual when nothing changed
}

// Issue 23: the PCH NVRTC saved while a header changed was filed under the old contents'
// fingerprint and served later programs. The header's times are set back so that NVRTC's own
// time check cannot tell either (deterministic).
TEST(CachePch, APchSavedWhileAHeaderChangedNeverServesLaterPrograms) {
  if (!compile_nvrtc_supports_pch()) GTEST_SKIP() << "NVRTC without PCH (before 12.8)";
  TempDir dir("cache-pch-edit-during");
  const std::filesystem::path headers = dir.path() / "include";
  const std::filesystem::path value = headers / "value.cuh";
  write_text(value, "constexpr int kValue = 111;\n");
  Config config = config_for(dir.path() / "store");
  config.pch_eager = true;
  Cache cache(config);
  struct stat edited_times {};
  bool edited = false;
  {
    HookGuard hook([&](const CompileRequest&) {
      if (edited) return;
      write_text(value, "constexpr int kValue = 222;\n");
      ASSERT_EQ(::stat(value.c_str(), &edited_times), 0);
      edited = true;
    });
    const CacheResult during = cache.compile(mdspan_program(5, headers.string()));
    EXPECT_NE(during.entry->payload.find("222"), std::string::npos);
  }
  ASSERT_TRUE(edited);
  EXPECT_EQ(cache.stats().headers_changed, 1u);
  write_text(value, "constexpr int kValue = 111;\n");  // the first fingerprint again
  const struct timespec times[2] = {edited_times.st_atim, edited_times.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, value.c_str(), times, 0), 0);
  for (int n : {6, 7}) {
    const CacheResult later = cache.compile(mdspan_program(n, headers.string()));
    EXPECT_NE(later.entry->payload.find("111"), std::string::npos)
        << "kernel " << n << " compiled from the PCH of the edited header";
  }
}

// A program distinct per `tag` (no heavy header: a fast compile).
CompileRequest tiny(const std::string& tag) {
  CompileRequest r;
  r.source = "__global__ void k_" + tag + "(int* p) { *p = 1; }\n";
  r.program_name = tag + ".cu";
  r.name_expressions = {"k_" + tag};
  return r;  // arch left empty: recorded as the caller asked
}

TEST(CacheSuite, RecordsEachRequestOnceInTheOrderItWasFirstAskedFor) {
  TempDir dir("cache-suite");
  Config config = config_for(dir.path());
  config.suite = "unit suite";
  {
    Cache cache(config);
    for (const char* tag : {"b", "a", "b", "c"}) (void)cache.compile(tiny(tag));
    EXPECT_FALSE(std::filesystem::exists(manifest_path(dir.path(), "unit suite")));  // at finish
  }
  auto manifest = load_manifest(dir.path(), "unit suite");
  ASSERT_TRUE(manifest && *manifest);
  std::vector<std::string> programs;
  for (const Recipe& recipe : (*manifest)->recipes) programs.push_back(recipe.program_name);
  EXPECT_EQ(programs, (std::vector<std::string>{"b.cu", "a.cu", "c.cu"}));
  EXPECT_EQ((*manifest)->recipes[0].arch, "");
  // A later run records its new recipe first and keeps the suite's others in their order.
  {
    Cache cache(config);
    (void)cache.compile(tiny("c"));
    (void)cache.compile(tiny("d"));
  }
  programs.clear();
  manifest = load_manifest(dir.path(), "unit suite");
  ASSERT_TRUE(manifest && *manifest);
  for (const Recipe& recipe : (*manifest)->recipes) programs.push_back(recipe.program_name);
  EXPECT_EQ(programs, (std::vector<std::string>{"d.cu", "b.cu", "a.cu", "c.cu"}));
}

TEST(CacheSuite, AWarmRunOfKnownRequestsInAnotherOrderRewritesNeitherTheManifestNorItsKeys) {
  TempDir dir("cache-suite-warm");
  Config config = config_for(dir.path());
  config.suite = "warm suite";
  {
    Cache cache(config);
    for (const char* tag : {"a", "b", "c"}) (void)cache.compile(tiny(tag));
  }
  const auto manifest_file = manifest_path(dir.path(), "warm suite");
  const auto keys_file = suite_keys_path(dir.path(), "warm suite");
  struct stat manifest_before {};
  struct stat keys_before {};
  ASSERT_EQ(::stat(manifest_file.c_str(), &manifest_before), 0);
  ASSERT_EQ(::stat(keys_file.c_str(), &keys_before), 0);
  {
    Cache cache(config);
    for (const char* tag : {"c", "a", "b"}) EXPECT_TRUE(cache.compile(tiny(tag)).hit);
  }
  struct stat manifest_after {};
  struct stat keys_after {};
  ASSERT_EQ(::stat(manifest_file.c_str(), &manifest_after), 0);
  ASSERT_EQ(::stat(keys_file.c_str(), &keys_after), 0);
  // A rewrite renames a new file over the old one: another inode.
  EXPECT_EQ(manifest_after.st_ino, manifest_before.st_ino);
  EXPECT_EQ(keys_after.st_ino, keys_before.st_ino);
  auto manifest = load_manifest(dir.path(), "warm suite");
  ASSERT_TRUE(manifest && *manifest);
  std::vector<std::string> programs;
  for (const Recipe& recipe : (*manifest)->recipes) programs.push_back(recipe.program_name);
  EXPECT_EQ(programs, (std::vector<std::string>{"a.cu", "b.cu", "c.cu"}));
}

TEST(CacheSuite, NothingIsRecordedWithoutASuiteInAReadOnlyStoreOrForAFailedCompile) {
  TempDir dir("cache-suite-none");
  {
    Cache cache(config_for(dir.path()));
    (void)cache.compile(tiny("a"));
  }
  EXPECT_FALSE(std::filesystem::exists(manifests_dir(dir.path())));
  Config read_only = config_for(dir.path());
  read_only.suite = "s";
  read_only.read_only = true;
  {
    Cache cache(read_only);
    (void)cache.compile(tiny("a"));
  }
  EXPECT_FALSE(std::filesystem::exists(manifests_dir(dir.path())));
  Config suite = config_for(dir.path());
  suite.suite = "s";
  {
    Cache cache(suite);
    CompileRequest broken = tiny("broken");
    broken.source = "this is not C++";
    EXPECT_THROW((void)cache.compile(broken), Error);
    (void)cache.compile(tiny("a"));
  }
  auto manifest = load_manifest(dir.path(), "s");
  ASSERT_TRUE(manifest && *manifest);
  ASSERT_EQ((*manifest)->recipes.size(), 1U);
  EXPECT_EQ((*manifest)->recipes[0].program_name, "a.cu");
}

}  // namespace
}  // namespace cubby
