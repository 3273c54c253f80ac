// Google Benchmark suite for the store's reliability goals (store_bench):
//  - BM_StoreColdOneProcess / BM_StoreColdEightProcesses: 20 small kernels compiled cold by one
//    process, then by 8 processes at once on a fresh store. Counters: `compiles` (from the store's
//    persisted stats: 20 when single flight works) and, for 8 processes, `vs_one_process` (wall
//    time over one process's; the goal is <= 1.2).
//  - BM_StoreHitDisk/<entries>: a disk hit in a store of 100 vs 100,000 entries (the goal: within
//    10%); a fresh memory tier every iteration. Each store is filled once per process, however
//    often Google Benchmark calls the family to settle its iteration count.
//  - BM_StoreGc/100000: `gc` of a 100,000-entry store 10% over its bound (the goal: about 1 s).
//  - BM_ManifestDecode: reading a suite manifest shaped like CuPy's own test files' (393 recipes
//    of ~1.4 KB source reading one of 5 lists of ~960 header paths), what every prefetch beside a
//    test run does first (format 1, each recipe with its own list: 47 MB, ~0.5 s on the dev VM).
//    Counter `bytes`: the manifest's size.
// Filling a 100,000-entry store takes 10-80 s on a 2-core machine (disk and load): the fill prints
// its progress on stderr every 10,000 entries. ci/bench.sh runs the 100,000-entry families only in
// its full run (--full; bench/tools/bench_select.py).
// Stores are temporary folders under CUBBY_BENCH_DIR (else the system temp folder), removed after.
#include <benchmark/benchmark.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "cubby/cubby.hpp"
#include "format/recipe.hpp"
#include "storage/local/gc.hpp"
#include "storage/local/store_stats.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kKernels = 20;

fs::path fresh_dir(const std::string& tag) {
  static std::random_device random;
  const char* base = std::getenv("CUBBY_BENCH_DIR");
  const fs::path root = base != nullptr ? fs::path(base) : fs::temp_directory_path();
  return root / ("cubby-store-bench-" + tag + "-" + std::to_string(::getpid()) + "-" +
                 std::to_string(random()));
}

cubby::CompileRequest kernel(int i) {
  cubby::CompileRequest r;
  r.source =
      "namespace ns { template <class T, int N> __global__ void k(T* p) { p[threadIdx.x] = "
      "T(N) * p[0] + T(" +
      std::to_string(i) + "); } }\n";
  r.program_name = "store_bench_" + std::to_string(i) + ".cu";
  r.name_expressions = {"ns::k<float, 3>", "ns::k<double, 5>"};
  r.arch = "sm_90";
  return r;
}

cubby::Config config_at(const fs::path& dir) {
  cubby::Config config;
  config.dir = dir;
  return config;
}

// Compiles the 20 kernels through a cache on `dir` (in a forked child when `fork_it`).
void compile_all(const fs::path& dir) {
  cubby::Cache cache(config_at(dir));
  for (int i = 0; i < kKernels; ++i) (void)cache.compile(kernel(i));
}

double one_process_seconds = 0;

std::int64_t persisted_compiles(const fs::path& dir) {
  auto counters = cubby::StoreStats(dir).read();
  return counters ? (*counters)["compiles"] : -1;
}

// Runs compile_all(dir) in `processes` forked processes at once and waits for all of them.
void compile_all_in_processes(const fs::path& dir, int processes) {
  std::vector<pid_t> pids;
  for (int p = 0; p < processes; ++p) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      compile_all(dir);
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  for (const pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
}

void BM_StoreColdOneProcess(benchmark::State& state) {
  double total = 0;
  std::int64_t compiles = 0;
  for (auto _ : state) {
    const fs::path dir = fresh_dir("cold1");
    const auto start = Clock::now();
    compile_all_in_processes(dir, 1);  // a fresh process, as the 8-process family uses
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    state.SetIterationTime(seconds);
    total += seconds;
    compiles = persisted_compiles(dir);
    fs::remove_all(dir);
  }
  one_process_seconds = total / static_cast<double>(state.iterations());
  state.counters["compiles"] = static_cast<double>(compiles);
}

void BM_StoreColdEightProcesses(benchmark::State& state) {
  const int processes = static_cast<int>(state.range(0));
  double total = 0;
  std::int64_t compiles = 0;
  for (auto _ : state) {
    const fs::path dir = fresh_dir("cold8");
    const auto start = Clock::now();
    compile_all_in_processes(dir, processes);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    state.SetIterationTime(seconds);
    total += seconds;
    compiles = persisted_compiles(dir);
    fs::remove_all(dir);
  }
  state.counters["compiles"] = static_cast<double>(compiles);
  if (one_process_seconds > 0) {
    state.counters["vs_one_process"] =
        total / static_cast<double>(state.iterations()) / one_process_seconds;
  }
}

// A store holding `count` entries: kernel(0)'s real entry plus fillers (1 KiB each, valid names,
// never read) spread over the shards like real keys.
fs::path store_with(std::int64_t count, const std::string& tag) {
  fs::path dir = fresh_dir(tag);  // not const: returned by move
  compile_all(dir);               // 20 real entries
  std::mt19937_64 random(42);
  const std::string filler(1024, 'f');
  constexpr std::int64_t kProgressEvery = 10000;
  for (std::int64_t i = kKernels; i < count; ++i) {
    if (count > kProgressEvery && i % kProgressEvery == 0) {
      std::fprintf(stderr, "store_bench: filling a store of %lld entries: %lld written\n",
                   static_cast<long long>(count), static_cast<long long>(i));
    }
    cubby::Key key;
    for (auto& byte : key.bytes) byte = static_cast<std::uint8_t>(random());
    const fs::path path = cubby::DiskTier(dir).path_of(key);
    fs::create_directories(path.parent_path());
    FILE* file = std::fopen(path.c_str(), "wb");
    if (file == nullptr) break;
    std::fwrite(filler.data(), 1, filler.size(), file);
    std::fclose(file);
  }
  return dir;
}

// The read-only store of `count` entries that BM_StoreHitDisk hits, filled on first use and
// removed at exit.
const fs::path& hit_store(std::int64_t count) {
  struct Stores {
    std::map<std::int64_t, fs::path> dirs;
    ~Stores() {
      std::error_code ignored;
      for (const auto& [size, dir] : dirs) fs::remove_all(dir, ignored);
    }
  };
  static Stores stores;
  auto found = stores.dirs.find(count);
  if (found == stores.dirs.end())
    found = stores.dirs.emplace(count, store_with(count, "hit")).first;
  return found->second;
}

void BM_StoreHitDisk(benchmark::State& state) {
  const fs::path& dir = hit_store(state.range(0));
  cubby::Config config = config_at(dir);
  config.memory_entries = 0;  // no memory tier: every iteration is a disk hit
  cubby::Cache cache(config);
  const cubby::CompileRequest request = kernel(0);
  for (auto _ : state) {
    auto result = cache.compile(request);
    if (result.tier != cubby::Source::disk) state.SkipWithError("not a disk hit");
    benchmark::DoNotOptimize(result);
  }
}

void BM_StoreGc(benchmark::State& state) {
  const std::int64_t count = state.range(0);
  const fs::path dir = store_with(count, "gc");
  cubby::DiskTier disk(dir);
  std::uint64_t bytes = 0;
  auto listed = disk.list([&](const cubby::DiskEntryInfo& info) { bytes += info.bytes; });
  if (!listed) state.SkipWithError("cannot list the store");
  cubby::GcOptions options;
  options.max_size = bytes * 10 / 11;  // 10% over the bound
  std::uint64_t evicted = 0;
  std::uint64_t round = 1000;  // seeds keys unlike store_with's
  for (auto _ : state) {
    auto report = cubby::collect_garbage(disk, options);
    if (!report) {
      state.SkipWithError("gc failed");
      break;
    }
    evicted = report->evicted;
    state.PauseTiming();
    // Put the evicted entries back (as fillers) for the next iteration.
    std::mt19937_64 random(++round);
    const std::string filler(1024, 'f');
    for (std::uint64_t i = 0; i < evicted; ++i) {
      cubby::Key key;
      for (auto& byte : key.bytes) byte = static_cast<std::uint8_t>(random());
      const fs::path path = disk.path_of(key);
      fs::create_directories(path.parent_path());
      FILE* file = std::fopen(path.c_str(), "wb");
      if (file == nullptr) break;
      std::fwrite(filler.data(), 1, filler.size(), file);
      std::fclose(file);
    }
    state.ResumeTiming();
  }
  state.counters["entries"] = static_cast<double>(count);
  state.counters["evicted"] = static_cast<double>(evicted);
  fs::remove_all(dir);
}

// A manifest shaped like the one CuPy's own test files record (bench/suite/cupy_files.txt).
cubby::Manifest cupy_shaped_manifest() {
  constexpr int kRecipes = 393;
  constexpr int kLists = 5;
  constexpr int kHeaders = 960;
  std::vector<std::vector<std::string>> lists(kLists);
  for (int list = 0; list < kLists; ++list) {
    for (int header = 0; header < kHeaders + list; ++header) {
      lists[list].push_back(
          "/usr/lib/python3/site-packages/cupy/_core/include/cupy/_cccl/thrust/thrust/detail/h" +
          std::to_string(header) + ".h");
    }
  }
  cubby::Manifest manifest;
  manifest.suite = "pytest-cupy";
  for (int i = 0; i < kRecipes; ++i) {
    cubby::Recipe recipe;
    recipe.program_name = "/dev/null/cupy/" + std::to_string(i) + ".cubin.cu";
    recipe.source = "#include <cupy/complex.cuh>\n" + std::string(1400, 'x') + std::to_string(i);
    recipe.arch = "sm_90";
    recipe.options = {"-I/usr/lib/python3/site-packages/cupy/_core/include", "-ftz=true",
                      "--device-as-default-execution-space", "-std=c++17"};
    recipe.header_paths = lists[i * kLists / kRecipes];  // each recipe its own copy, as recorded
    manifest.recipes.push_back(std::move(recipe));
  }
  return manifest;
}

void BM_ManifestDecode(benchmark::State& state) {
  const std::string bytes = cubby::encode_manifest(cupy_shaped_manifest());
  for (auto _ : state) {
    auto manifest = cubby::decode_manifest(bytes);
    if (!manifest) state.SkipWithError(manifest.error().message.c_str());
    benchmark::DoNotOptimize(manifest);
  }
  state.counters["bytes"] = static_cast<double>(bytes.size());
}

// What a warm run of a recorded suite of kKernels programs costs the thread that asks for them
// (a fresh Cache each iteration, as a new test process has), with the suite read ahead into
// memory first (Cache::read_ahead_suite, untimed: the pytest plugin runs it in a thread while
// pytest collects) or without (every lookup a disk hit).
void BM_SuiteLookups(benchmark::State& state) {
  const bool read_ahead = state.range(0) != 0;
  static const fs::path dir = [] {
    fs::path made = fresh_dir("suite");
    cubby::Config config = config_at(made);
    config.suite = "bench-suite";
    cubby::Cache cache(config);  // compiles and records the suite (at its end)
    for (int i = 0; i < kKernels; ++i) (void)cache.compile(kernel(i));
    return made;
  }();
  cubby::Config config = config_at(dir);
  config.suite = "bench-suite";
  const cubby::Source expected = read_ahead ? cubby::Source::memory : cubby::Source::disk;
  for (auto _ : state) {
    cubby::Cache cache(config);
    if (read_ahead && cache.read_ahead_suite().read != kKernels) state.SkipWithError("read ahead");
    const auto start = Clock::now();
    for (int i = 0; i < kKernels; ++i) {
      const cubby::CacheResult result = cache.compile(kernel(i));
      if (result.tier != expected) state.SkipWithError("not the tier expected");
      benchmark::DoNotOptimize(result);
    }
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  state.counters["programs"] = kKernels;
}

}  // namespace

BENCHMARK(BM_SuiteLookups)
    ->ArgName("read_ahead")
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StoreColdOneProcess)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StoreColdEightProcesses)
    ->Arg(8)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StoreHitDisk)->Arg(100)->Arg(100000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StoreGc)->Arg(100000)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ManifestDecode)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
