// cubby's Google Benchmark suite: cold vs warm for the templated mdspan workloads.
//
// Family names are a contract dashboards key on: BM_<Family>/<workload>. Families run in the
// order registered, so every warm family can report its speedup over the cold compile measured
// in the same run (counter `speedup_vs_cold`). GPU families skip with the reason when no GPU is
// usable. The store is a fresh temporary folder unless CUBBY_BENCH_DIR names one.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cubby/cubby.hpp"
#include "cubby_workloads.hpp"
#include "storage/remote/remote.hpp"
#include "util/hash.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Per-workload state shared by the families: the requests (one per program), a warm store, and
// the times measured in this run.
struct Bench {
  std::vector<cubby::CompileRequest> requests;
  fs::path warm_dir;
  std::vector<std::shared_ptr<const cubby::Entry>> entries;  // warm entries (load baseline)
  double cold_seconds = 0;                                   // mean of BM_ColdCompile in this run
  double load_baseline_seconds = 0;  // mean of BM_ModuleLoadBaseline in this run
  double disk_seconds = 0;           // mean of BM_WarmHitDisk in this run (a local warm run)
  double disk_served_seconds = 0;    // its part until every program is resolved (no exit work)
  double loaded_seconds = 0;         // mean of BM_WarmHitLoaded in this run (a local warm GPU run)
  bool remote_filled = false;        // the remote named by CUBBY_REMOTE holds the warm entries
};

// A benchmark workload: one or more NVRTC programs under one name.
struct BenchWorkload {
  std::string name;
  std::vector<cubby::workloads::Workload> programs;
};

fs::path bench_root() {
  static const fs::path root = [] {
    if (const char* dir = std::getenv("CUBBY_BENCH_DIR")) return fs::path(dir);
    std::random_device random;
    return fs::temp_directory_path() /
           ("cubby-bench-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
  }();
  return root;
}

std::string bench_arch() {
  static const std::string arch = [] {
    if (const char* env = std::getenv("CUBBY_ARCH")) return std::string(env);
    auto gpu = cubby::gpu_arch();
    return gpu ? *gpu : std::string("sm_90");
  }();
  return arch;
}

cubby::Config config_at(const fs::path& dir) {
  cubby::Config config;
  config.dir = dir;
  return config;
}

std::map<std::string, Bench>& benches() {
  static std::map<std::string, Bench> all;
  return all;
}

Bench& bench_for(const BenchWorkload& workload) {
  Bench& bench = benches()[workload.name];
  if (bench.requests.empty()) {
    for (const auto& program : workload.programs) {
      cubby::CompileRequest request;
      request.source = program.source;
      request.program_name = program.name + ".cu";
      request.name_expressions = program.name_expressions;
      request.options = program.options;
      request.arch = bench_arch();
      bench.requests.push_back(std::move(request));
    }
    bench.warm_dir = bench_root() / ("warm-" + workload.name);
  }
  return bench;
}

// Makes sure the warm store holds the workload's entries (compiling once if needed).
void warm_up(Bench& bench) {
  if (!bench.entries.empty()) return;
  cubby::Cache cache(config_at(bench.warm_dir));
  for (const auto& request : bench.requests) bench.entries.push_back(cache.compile(request).entry);
}

void add_common_counters(benchmark::State& state, const Bench& bench) {
  double bytes = 0;
  for (const auto& entry : bench.entries) bytes += static_cast<double>(entry->payload.size());
  double names = 0;
  for (const auto& request : bench.requests) {
    names += static_cast<double>(request.name_expressions.size());
  }
  state.counters["cubin_bytes"] = bytes;
  state.counters["name_expressions"] = names;
  state.counters["programs"] = static_cast<double>(bench.requests.size());
}

// Runs `body` once per iteration and returns the mean seconds per iteration (wall clock).
template <class Body>
double timed(benchmark::State& state, Body&& body) {
  const auto start = Clock::now();
  for (auto _ : state) body();
  const double total = std::chrono::duration<double>(Clock::now() - start).count();
  return state.iterations() > 0 ? total / static_cast<double>(state.iterations()) : 0;
}

void report_speedup(benchmark::State& state, const Bench& bench, double seconds) {
  if (bench.cold_seconds > 0 && seconds > 0) {
    state.counters["speedup_vs_cold"] = bench.cold_seconds / seconds;
  }
}

void BM_KeyDerive(benchmark::State& state, const BenchWorkload* workload) {
  Bench& bench = bench_for(*workload);
  cubby::Cache cache(config_at(bench.warm_dir));
  (void)timed(state, [&] {
    for (const auto& request : bench.requests) benchmark::DoNotOptimize(cache.key_of(request));
  });
  add_common_counters(state, bench);
}

// Every program of `workload` compiled one after another in a fresh store (a cold run of a new
// process's cache), with NVRTC's automatic PCH when `pch`; the mean seconds of a round.
double cold_rounds(benchmark::State& state, const BenchWorkload& workload, Bench& bench, bool pch,
                   const std::string& tag) {
  int round = 0;
  return timed(state, [&] {
    state.PauseTiming();
    const fs::path dir =
        bench_root() / (tag + "-" + workload.name + "-" + std::to_string(::getpid()) + "-" +
                        std::to_string(round++));
    state.ResumeTiming();
    cubby::Config config = config_at(dir);
    config.pch = pch;
    cubby::Cache cache(config);
    for (const auto& request : bench.requests) {
      auto result = cache.compile(request);
      if (result.hit) state.SkipWithError("cold compile hit the cache");
      benchmark::DoNotOptimize(result);
    }
    const cubby::Stats stats = cache.stats();
    state.counters["pch_created"] = static_cast<double>(stats.pch_created);
    state.counters["pch_reused"] = static_cast<double>(stats.pch_reused);
  });
}

// The cold run as a user gets it (CUBBY_PCH's default: on): the warm families' baseline.
void BM_ColdCompile(benchmark::State& state, const BenchWorkload* workload) {
  Bench& bench = bench_for(*workload);
  bench.cold_seconds = cold_rounds(state, *workload, bench, cubby::Config{}.pch, "cold");
  warm_up(bench);
  add_common_counters(state, bench);
}

// A cold suite compiled serially without PCH (`serial`) and with it (`pch`): what PCH saves.
void BM_ColdSuite(benchmark::State& state, const BenchWorkload* workload, bool pch) {
  Bench& bench = bench_for(*workload);
  (void)cold_rounds(state, *workload, bench, pch, pch ? "suite-pch" : "suite-serial");
  add_common_counters(state, bench);
}

void BM_WarmHitMemory(benchmark::State& state, const BenchWorkload* workload) {
  Bench& bench = bench_for(*workload);
  warm_up(bench);
  cubby::Cache cache(config_at(bench.warm_dir));
  for (const auto& request : bench.requests) (void)cache.compile(request);
  const double seconds = timed(state, [&] {
    for (const auto& request : bench.requests) {
      auto result = cache.compile(request);
      if (result.tier != cubby::Source::memory) state.SkipWithError("not a memory hit");
      benchmark::DoNotOptimize(result);
    }
  });
  add_common_counters(state, bench);
  report_speedup(state, bench, seconds);
}

void BM_WarmHitDisk(benchmark::State& state, const BenchWorkload* workload) {
  Bench& bench = bench_for(*workload);
  warm_up(bench);
  double served_seconds = 0;
  const double seconds = timed(state, [&] {
    const auto start = Clock::now();
    cubby::Cache cache(config_at(bench.warm_dir));  // fresh memory tier every iteration
    for (const auto& request : bench.requests) {
      auto result = cache.compile(request);
      if (result.tier != cubby::Source::disk) state.SkipWithError("not a disk hit");
      benchmark::DoNotOptimize(result);
    }
    served_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  });
  bench.disk_seconds = seconds;
  if (state.iterations() > 0) {
    bench.disk_served_seconds = served_seconds / static_cast<double>(state.iterations());
  }
  add_common_counters(state, bench);
  report_speedup(state, bench, seconds);
}

// The remote settings of the environment (CUBBY_REMOTE, CUBBY_REMOTE_SECRET, ...) over a store
// folder; nullopt (and the benchmark skipped) without CUBBY_REMOTE.
std::optional<cubby::Config> remote_config(benchmark::State& state, const fs::path& dir) {
  auto env = cubby::Config::from_env();
  if (!env || env->remote_url.empty()) {
    state.SkipWithError("skipped: no Redis (set CUBBY_REMOTE=redis://HOST:PORT to run it)");
    return std::nullopt;
  }
  cubby::Config config = *env;
  config.dir = dir;
  config.disabled = false;
  config.read_only = false;
  return config;
}

// Publishes the warm entries to the remote (once per workload, untimed). False: skipped.
bool fill_remote(benchmark::State& state, Bench& bench, const cubby::Config& config) {
  warm_up(bench);
  if (bench.remote_filled) return true;
  auto tier = cubby::open_remote_tier(config);
  cubby::Cache warm(config_at(bench.warm_dir));
  for (const auto& request : bench.requests) {
    auto result = warm.compile(request);
    auto put = tier ? tier->put(result.key, cubby::encode_entry(result.key, *result.entry))
                    : cubby::Result<void>(cubby::fail(cubby::Errc::invalid_argument, "no tier"));
    if (!put) {
      const std::string message = "remote store unusable (" + put.error().message + ")";
      state.SkipWithError(message.c_str());
      return false;
    }
  }
  bench.remote_filled = true;
  return true;
}

// A store folder no run has used: google/benchmark calls a family more than once, and
// CUBBY_BENCH_DIR may be reused, so folders are named by process and a counter.
fs::path fresh_dir(const std::string& family, const BenchWorkload& workload) {
  static int round = 0;
  return bench_root() / (family + "-" + workload.name + "-" + std::to_string(::getpid()) + "-" +
                         std::to_string(round++));
}

// One fresh runner: a new, empty store folder and memory tier, every request served by the
// remote (then backfilled to the folder; the Cache's destruction, which waits for the backfills
// and persists the counters, is part of the run) and handed to `use` (a GPU run loads it). Adds
// the time until every program was served and used to `served_seconds`. Returns false (after
// skipping) on anything else.
bool fresh_runner(benchmark::State& state, const Bench& bench, const cubby::Config& config,
                  double& served_seconds,
                  const std::function<void(const cubby::CacheResult&)>& use = {}) {
  const auto start = Clock::now();
  cubby::Cache cache(config);
  for (const auto& request : bench.requests) {
    auto result = cache.compile(request);
    if (result.tier != cubby::Source::remote) {
      const std::string message = std::string("not a remote hit (") +
                                  cubby::source_name(result.tier) + ") from " +
                                  cubby::redact_remote_url(config.remote_url);
      state.SkipWithError(message.c_str());
      return false;
    }
    if (use) use(result);
    benchmark::DoNotOptimize(result);
  }
  served_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  return true;
}

// ratio_vs_local_warm: whole runs (exit work included) against BM_WarmHitDisk of this run;
// served_ratio_vs_local_warm: the same until every program is resolved (what tests wait for;
// the backfill then overlaps with their work); served_us: that time.
void report_vs_local(benchmark::State& state, const Bench& bench, double seconds,
                     double served_total) {
  if (bench.disk_seconds > 0 && seconds > 0) {
    state.counters["ratio_vs_local_warm"] = seconds / bench.disk_seconds;
  }
  if (state.iterations() == 0) return;
  const double served = served_total / static_cast<double>(state.iterations());
  state.counters["served_us"] = served * 1e6;
  if (bench.disk_served_seconds > 0 && served > 0) {
    state.counters["served_ratio_vs_local_warm"] = served / bench.disk_served_seconds;
  }
}

// A hit from the remote tier: a fresh, empty disk folder and memory tier every iteration, so
// every lookup is served by the remote store named by CUBBY_REMOTE (verified, then backfilled to
// the folder: what a hit on a fresh runner costs).
void BM_WarmHitRemote(benchmark::State& state, const BenchWorkload* workload) {
  Bench& bench = bench_for(*workload);
  auto config = remote_config(state, bench_root() / "unused");
  if (!config || !fill_remote(state, bench, *config)) return;
  double served_seconds = 0;
  const double seconds = timed(state, [&] {
    state.PauseTiming();
    config->dir = fresh_dir("remote", *workload);
    state.ResumeTiming();
    (void)fresh_runner(state, bench, *config, served_seconds);  // a failure skips: the loop ends
  });
  add_common_counters(state, bench);
  report_speedup(state, bench, seconds);
  report_vs_local(state, bench, seconds, served_seconds);
}

// Remote GETs of the workload's entries on a warm connection (no store, no verification),
// written uncompressed (`raw`, as with CUBBY_REMOTE_COMPRESS=0) or LZ4-compressed (`lz4`, the
// default) and read back, decompression included: what compression costs or saves per lookup on
// this link. Counter wire_bytes: the bytes one iteration moved over the network.
void BM_RemoteGet(benchmark::State& state, const BenchWorkload* workload, bool compress) {
  Bench& bench = bench_for(*workload);
  auto config = remote_config(state, bench_root() / "unused");
  if (!config) return;
  warm_up(bench);
  config->remote_compress = compress;
  auto tier = cubby::open_remote_tier(*config);
  std::vector<cubby::Key> keys;  // keys of their own per form: the forms never overwrite
  for (std::size_t i = 0; tier && i < bench.entries.size(); ++i) {
    cubby::Key key;
    key.bytes = cubby::hash128("BM_RemoteGet/" + workload->name + (compress ? "/lz4/" : "/raw/") +
                               std::to_string(i));
    if (!tier->put(key, cubby::encode_entry(key, *bench.entries[i]))) {
      state.SkipWithError("remote store unusable (a write failed)");
      return;
    }
    keys.push_back(key);
  }
  const std::uint64_t before = tier ? tier->counters().bytes_read : 0;
  for (auto _ : state) {
    for (const auto& key : keys) {
      auto value = tier->get(key);
      if (!value || !value->has_value()) state.SkipWithError("not served by the remote");
      benchmark::DoNotOptimize(value);
    }
  }
  add_common_counters(state, bench);
  if (state.iterations() > 0 && tier) {
    state.counters["wire_bytes"] = static_cast<double>(tier->counters().bytes_read - before) /
                                   static_cast<double>(state.iterations());
  }
}

// The fleet simulation: runner A has published the workload; runner B (a second store folder)
// makes its first run, served by Redis, and its second run is local. A run is one fresh Cache
// (as a new process has) resolving every program of the workload (mdspan-suite: 25 programs).
// The time is B's first run; counters compare it with a local warm run (BM_WarmHitDisk,
// ratio_vs_local_warm and served_ratio_vs_local_warm) and with cold (speedup_vs_cold), all
// measured in this run.
void BM_FleetFirstRun(benchmark::State& state, const BenchWorkload* workload) {
  Bench& bench = bench_for(*workload);
  auto config = remote_config(state, bench_root() / "unused");
  if (!config || !fill_remote(state, bench, *config)) return;
  double first_run_seconds = 0;  // B's first runs only (the second runs are untimed)
  double served_seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    config->dir = fresh_dir("fleet", *workload);
    state.ResumeTiming();
    const auto start = Clock::now();
    const bool served = fresh_runner(state, bench, *config, served_seconds);
    first_run_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    if (!served) break;
    state.PauseTiming();  // B's second run: served by its own folder now
    {
      cubby::Cache second(*config);
      for (const auto& request : bench.requests) {
        if (second.compile(request).tier != cubby::Source::disk) {
          state.SkipWithError("the runner's second run was not served by its own store");
        }
      }
    }
    state.ResumeTiming();
  }
  const double seconds =
      state.iterations() > 0 ? first_run_seconds / static_cast<double>(state.iterations()) : 0;
  add_common_counters(state, bench);
  report_speedup(state, bench, seconds);
  report_vs_local(state, bench, seconds, served_seconds);
}

bool skip_without_gpu(benchmark::State& state) {
  auto status = cubby::gpu_status();
  if (status) return false;
  state.SkipWithError(("skipped: no GPU (" + status.error().message + ")").c_str());
  return true;
}

// Loads the module and resolves every name: with CUDA's lazy loading (the default since CUDA
// 12.2) cuModuleLoadData defers the per-kernel work to the first lookup, so a load without
// lookups is not the floor of a usable hit. Both families below do the same driver work.
void load_and_resolve(const std::shared_ptr<const cubby::Entry>& entry) {
  cubby::Module module(entry);
  for (const auto& [expression, lowered] : entry->lowered_names) {
    if (expression.starts_with("&")) {
      benchmark::DoNotOptimize(module.variable(expression));
    } else {
      benchmark::DoNotOptimize(module.function(expression));
    }
  }
}

// Fresh copies of the warm entries (new allocations, as a hit delivers), made untimed.
std::vector<std::shared_ptr<const cubby::Entry>> fresh_copies(const Bench& bench) {
  std::vector<std::shared_ptr<const cubby::Entry>> copies;
  copies.reserve(bench.entries.size());
  for (const auto& entry : bench.entries) {
    copies.push_back(std::make_shared<const cubby::Entry>(*entry));
  }
  return copies;
}

// The physical floor of a hit: cuModuleLoadData of the already-decoded CUBINs + name lookups.
// Each iteration loads fresh copies of the bytes, so no driver or CPU cache keyed by the
// address of the image makes the floor look lower than any real hit could be.
void BM_ModuleLoadBaseline(benchmark::State& state, const BenchWorkload* workload) {
  if (skip_without_gpu(state)) return;
  Bench& bench = bench_for(*workload);
  warm_up(bench);
  (void)cubby::ensure_context();
  for (const auto& entry : bench.entries) load_and_resolve(entry);  // one-time context costs
  bench.load_baseline_seconds = timed(state, [&] {
    state.PauseTiming();
    auto copies = fresh_copies(bench);
    state.ResumeTiming();
    for (const auto& entry : copies) load_and_resolve(entry);
    state.PauseTiming();
    copies.clear();
    state.ResumeTiming();
  });
  add_common_counters(state, bench);
}

// hit (fresh memory tier: a disk hit) + load + resolve every name. Counters hit_us and load_us
// split the mean iteration into its two parts.
void BM_WarmHitLoaded(benchmark::State& state, const BenchWorkload* workload) {
  if (skip_without_gpu(state)) return;
  Bench& bench = bench_for(*workload);
  warm_up(bench);
  (void)cubby::ensure_context();
  double hit_seconds = 0;
  double load_seconds = 0;
  const double seconds = timed(state, [&] {
    cubby::Cache cache(config_at(bench.warm_dir));
    for (const auto& request : bench.requests) {
      const auto start = Clock::now();
      auto entry = cache.compile(request).entry;
      const auto hit = Clock::now();
      load_and_resolve(entry);
      hit_seconds += std::chrono::duration<double>(hit - start).count();
      load_seconds += std::chrono::duration<double>(Clock::now() - hit).count();
    }
  });
  add_common_counters(state, bench);
  report_speedup(state, bench, seconds);
  if (state.iterations() > 0) {
    const auto n = static_cast<double>(state.iterations());
    state.counters["hit_us"] = hit_seconds / n * 1e6;
    state.counters["load_us"] = load_seconds / n * 1e6;
  }
  if (bench.load_baseline_seconds > 0) {
    state.counters["ratio_vs_load_baseline"] = seconds / bench.load_baseline_seconds;
  }
  bench.loaded_seconds = seconds;
}

// The fleet simulation as a GPU run: runner B's first run on a fresh store folder, every program
// served by Redis, then loaded and every name resolved, as a test uses its kernels. Its
// ratio_vs_local_warm compares it with BM_WarmHitLoaded of this run (the same run served by a
// warm local store); speedup_vs_cold with BM_ColdCompile.
void BM_FleetFirstRunLoaded(benchmark::State& state, const BenchWorkload* workload) {
  if (skip_without_gpu(state)) return;
  Bench& bench = bench_for(*workload);
  auto config = remote_config(state, bench_root() / "unused");
  if (!config || !fill_remote(state, bench, *config)) return;
  (void)cubby::ensure_context();
  double served_seconds = 0;
  const double seconds = timed(state, [&] {
    state.PauseTiming();
    config->dir = fresh_dir("fleet-loaded", *workload);
    state.ResumeTiming();
    // A failure skips: the loop ends.
    (void)fresh_runner(state, bench, *config, served_seconds,
                       [](const cubby::CacheResult& result) { load_and_resolve(result.entry); });
  });
  add_common_counters(state, bench);
  report_speedup(state, bench, seconds);
  if (bench.loaded_seconds > 0 && seconds > 0) {
    state.counters["ratio_vs_local_warm"] = seconds / bench.loaded_seconds;
  }
}

const BenchWorkload& stored(BenchWorkload workload) {
  static std::map<std::string, std::unique_ptr<BenchWorkload>> kept;
  auto& slot = kept[workload.name];
  slot = std::make_unique<BenchWorkload>(std::move(workload));
  return *slot;
}

void register_all() {
  namespace w = cubby::workloads;
  const char* remote_url = std::getenv("CUBBY_REMOTE");
  const bool remote = remote_url != nullptr && *remote_url != '\0';
  for (const auto* workload :
       {&stored({"mdspan50", {w::mdspan50()}}), &stored({w::kMdspanSuiteName, w::mdspan_suite()}),
        &stored({"tiny", {w::tiny()}})}) {
    const std::string& name = workload->name;
    // One cold round of a multi-program workload is already many compiles.
    const benchmark::IterationCount rounds = workload->programs.size() > 1 ? 1 : 3;
    benchmark::RegisterBenchmark(("BM_KeyDerive/" + name).c_str(), BM_KeyDerive, workload)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("BM_ColdCompile/" + name).c_str(), BM_ColdCompile, workload)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(rounds)
        ->UseRealTime();
    for (const bool pch : {false, true}) {
      benchmark::RegisterBenchmark(
          ("BM_ColdSuite/" + name + (pch ? "/pch" : "/serial")).c_str(),
          [workload, pch](benchmark::State& state) { BM_ColdSuite(state, workload, pch); })
          ->Unit(benchmark::kMillisecond)
          ->Iterations(rounds)
          ->UseRealTime();
    }
    benchmark::RegisterBenchmark(("BM_WarmHitMemory/" + name).c_str(), BM_WarmHitMemory, workload)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("BM_WarmHitDisk/" + name).c_str(), BM_WarmHitDisk, workload)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    auto* remote_family = benchmark::RegisterBenchmark(("BM_WarmHitRemote/" + name).c_str(),
                                                       BM_WarmHitRemote, workload)
                              ->Unit(benchmark::kMicrosecond)
                              ->UseRealTime();
    auto* fleet_family = benchmark::RegisterBenchmark(("BM_FleetFirstRun/" + name).c_str(),
                                                      BM_FleetFirstRun, workload)
                             ->Unit(benchmark::kMicrosecond)
                             ->UseRealTime();
    for (const bool compress : {false, true}) {
      auto* get_family = benchmark::RegisterBenchmark(
          ("BM_RemoteGet/" + name + (compress ? "/lz4" : "/raw")).c_str(), BM_RemoteGet, workload,
          compress);
      get_family->Unit(benchmark::kMicrosecond)->UseRealTime();
      if (!remote) get_family->Iterations(1);
    }
    if (!remote) {  // skipped at once: no Redis
      remote_family->Iterations(1);
      fleet_family->Iterations(1);
    }
    benchmark::RegisterBenchmark(("BM_ModuleLoadBaseline/" + name).c_str(), BM_ModuleLoadBaseline,
                                 workload)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("BM_WarmHitLoaded/" + name).c_str(), BM_WarmHitLoaded, workload)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    auto* fleet_loaded_family =
        benchmark::RegisterBenchmark(("BM_FleetFirstRunLoaded/" + name).c_str(),
                                     BM_FleetFirstRunLoaded, workload)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
    if (!remote) fleet_loaded_family->Iterations(1);  // skipped at once: no Redis
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // Bumped when a family, counter or context key changes meaning; readers check it.
  benchmark::AddCustomContext("cubby_bench_schema", "2");
  benchmark::AddCustomContext("arch", bench_arch());
  auto nvrtc = cubby::locate_nvrtc();
  benchmark::AddCustomContext("nvrtc", nvrtc ? nvrtc->version : "unavailable");
  auto gpu = cubby::gpu_status();
  benchmark::AddCustomContext("gpu", gpu ? "yes" : gpu.error().message);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!std::getenv("CUBBY_BENCH_DIR")) {
    std::error_code ignored;
    fs::remove_all(bench_root(), ignored);
  }
  return 0;
}
