// BM_ColdCompile/<workload>: every program compiled in a fresh store, as a user's first run gets
// it (CUBBY_PCH's default); the warm families' baseline (speedup_vs_cold).
#include "families.hpp"

namespace cubby_bench {
namespace {

// The cold run as a user gets it (CUBBY_PCH's default: on): the warm families' baseline.
void BM_ColdCompile(benchmark::State& state, const BenchWorkload* workload) {
  Bench& bench = bench_for(*workload);
  bench.cold_seconds = cold_rounds(state, *workload, bench, cubby::Config{}.pch, "cold");
  warm_up(bench);
  add_common_counters(state, bench);
}

}  // namespace

void register_cold_compile(const BenchWorkload* workload, benchmark::IterationCount rounds) {
  benchmark::RegisterBenchmark(("BM_ColdCompile/" + workload->name).c_str(), BM_ColdCompile,
                               workload)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(rounds)
      ->UseRealTime();
}

}  // namespace cubby_bench
