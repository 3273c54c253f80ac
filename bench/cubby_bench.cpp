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
#include <map>
#include <memory>
#include <random>
#include <string>

#include "cubby/cubby.hpp"
#include "cubby_workloads.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Per-workload state shared by the families: the request, a warm store, and measured times.
struct Bench {
  cubby::CompileRequest request;
  fs::path warm_dir;
  std::shared_ptr<const cubby::Entry> entry;  // the warm entry (for the load baseline)
  double cold_seconds = 0;                    // mean of BM_ColdCompile in this run
  double load_baseline_seconds = 0;           // mean of BM_ModuleLoadBaseline in this run
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

Bench& bench_for(const cubby::workloads::Workload& workload) {
  Bench& bench = benches()[workload.name];
  if (bench.request.source.empty()) {
    bench.request.source = workload.source;
    bench.request.program_name = workload.name + ".cu";
    bench.request.name_expressions = workload.name_expressions;
    bench.request.options = workload.options;
    bench.request.arch = bench_arch();
    bench.warm_dir = bench_root() / ("warm-" + workload.name);
  }
  return bench;
}

// Makes sure the warm store holds the workload's entry (compiling once if needed).
void warm_up(Bench& bench) {
  if (bench.entry) return;
  cubby::Cache cache(config_at(bench.warm_dir));
  bench.entry = cache.compile(bench.request).entry;
}

void add_common_counters(benchmark::State& state, const Bench& bench) {
  state.counters["cubin_bytes"] =
      static_cast<double>(bench.entry ? bench.entry->payload.size() : 0);
  state.counters["name_expressions"] = static_cast<double>(bench.request.name_expressions.size());
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

void BM_KeyDerive(benchmark::State& state, const cubby::workloads::Workload* workload) {
  Bench& bench = bench_for(*workload);
  cubby::Cache cache(config_at(bench.warm_dir));
  (void)timed(state, [&] { benchmark::DoNotOptimize(cache.key_of(bench.request)); });
  add_common_counters(state, bench);
}

void BM_ColdCompile(benchmark::State& state, const cubby::workloads::Workload* workload) {
  Bench& bench = bench_for(*workload);
  int round = 0;
  const double seconds = timed(state, [&] {
    state.PauseTiming();
    const fs::path dir = bench_root() / ("cold-" + workload->name + "-" + std::to_string(round++));
    state.ResumeTiming();
    cubby::Cache cache(config_at(dir));
    auto result = cache.compile(bench.request);
    if (result.hit) state.SkipWithError("cold compile hit the cache");
    benchmark::DoNotOptimize(result);
  });
  bench.cold_seconds = seconds;
  warm_up(bench);
  add_common_counters(state, bench);
}

void BM_WarmHitMemory(benchmark::State& state, const cubby::workloads::Workload* workload) {
  Bench& bench = bench_for(*workload);
  warm_up(bench);
  cubby::Cache cache(config_at(bench.warm_dir));
  (void)cache.compile(bench.request);
  const double seconds = timed(state, [&] {
    auto result = cache.compile(bench.request);
    if (result.tier != cubby::Source::memory) state.SkipWithError("not a memory hit");
    benchmark::DoNotOptimize(result);
  });
  add_common_counters(state, bench);
  report_speedup(state, bench, seconds);
}

void BM_WarmHitDisk(benchmark::State& state, const cubby::workloads::Workload* workload) {
  Bench& bench = bench_for(*workload);
  warm_up(bench);
  const double seconds = timed(state, [&] {
    cubby::Cache cache(config_at(bench.warm_dir));  // fresh memory tier every iteration
    auto result = cache.compile(bench.request);
    if (result.tier != cubby::Source::disk) state.SkipWithError("not a disk hit");
    benchmark::DoNotOptimize(result);
  });
  add_common_counters(state, bench);
  report_speedup(state, bench, seconds);
}

bool skip_without_gpu(benchmark::State& state) {
  auto status = cubby::gpu_status();
  if (status) return false;
  state.SkipWithError(("no GPU: " + status.error().message).c_str());
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

// The physical floor of a hit: cuModuleLoadData of the already-decoded CUBIN + name lookups.
void BM_ModuleLoadBaseline(benchmark::State& state, const cubby::workloads::Workload* workload) {
  if (skip_without_gpu(state)) return;
  Bench& bench = bench_for(*workload);
  warm_up(bench);
  (void)cubby::ensure_context();
  load_and_resolve(bench.entry);  // the first load in a context pays one-time costs
  bench.load_baseline_seconds = timed(state, [&] { load_and_resolve(bench.entry); });
  add_common_counters(state, bench);
}

void BM_WarmHitLoaded(benchmark::State& state, const cubby::workloads::Workload* workload) {
  if (skip_without_gpu(state)) return;
  Bench& bench = bench_for(*workload);
  warm_up(bench);
  (void)cubby::ensure_context();
  const double seconds = timed(state, [&] {
    cubby::Cache cache(config_at(bench.warm_dir));
    load_and_resolve(cache.compile(bench.request).entry);
  });
  add_common_counters(state, bench);
  report_speedup(state, bench, seconds);
  if (bench.load_baseline_seconds > 0) {
    state.counters["ratio_vs_load_baseline"] = seconds / bench.load_baseline_seconds;
  }
}

const cubby::workloads::Workload& stored(cubby::workloads::Workload workload) {
  static std::map<std::string, std::unique_ptr<cubby::workloads::Workload>> kept;
  auto& slot = kept[workload.name];
  slot = std::make_unique<cubby::workloads::Workload>(std::move(workload));
  return *slot;
}

void register_all() {
  for (const auto* workload :
       {&stored(cubby::workloads::mdspan50()), &stored(cubby::workloads::tiny())}) {
    const std::string& name = workload->name;
    benchmark::RegisterBenchmark(("BM_KeyDerive/" + name).c_str(), BM_KeyDerive, workload)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("BM_ColdCompile/" + name).c_str(), BM_ColdCompile, workload)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("BM_WarmHitMemory/" + name).c_str(), BM_WarmHitMemory, workload)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("BM_WarmHitDisk/" + name).c_str(), BM_WarmHitDisk, workload)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("BM_ModuleLoadBaseline/" + name).c_str(), BM_ModuleLoadBaseline,
                                 workload)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("BM_WarmHitLoaded/" + name).c_str(), BM_WarmHitLoaded, workload)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
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
