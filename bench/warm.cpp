// The warm local path: BM_KeyDerive/<workload> (the key of every program), BM_WarmHitMemory and
// BM_WarmHitDisk (every program a memory hit, a disk hit of a fresh Cache).
#include "families.hpp"

namespace cubby_bench {
namespace {

void BM_KeyDerive(benchmark::State& state, const BenchWorkload* workload) {
  Bench& bench = bench_for(*workload);
  cubby::Cache cache(config_at(bench.warm_dir));
  (void)timed(state, [&] {
    for (const auto& request : bench.requests) benchmark::DoNotOptimize(cache.key_of(request));
  });
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
    served_seconds += seconds_since(start);
  });
  bench.disk_seconds = seconds;
  if (state.iterations() > 0) {
    bench.disk_served_seconds = served_seconds / static_cast<double>(state.iterations());
  }
  add_common_counters(state, bench);
  report_speedup(state, bench, seconds);
}

}  // namespace

void register_key_derive(const BenchWorkload* workload) {
  benchmark::RegisterBenchmark(("BM_KeyDerive/" + workload->name).c_str(), BM_KeyDerive, workload)
      ->Unit(benchmark::kMicrosecond);
}

void register_warm_hits(const BenchWorkload* workload) {
  const std::string& name = workload->name;
  benchmark::RegisterBenchmark(("BM_WarmHitMemory/" + name).c_str(), BM_WarmHitMemory, workload)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(("BM_WarmHitDisk/" + name).c_str(), BM_WarmHitDisk, workload)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

}  // namespace cubby_bench
