// cubby's Google Benchmark suite: cold vs warm for the templated mdspan workloads. One file per
// family (families.hpp lists them), what they share in runner.hpp; this file registers them per
// workload and runs them.
//
// Family names are a contract dashboards key on: BM_<Family>/<workload>. Families run in the
// order registered, so every warm family can report its speedup over the cold compile measured
// in the same run (counter `speedup_vs_cold`). GPU families skip with the reason when no GPU is
// usable. The store is a fresh temporary folder unless CUBBY_BENCH_DIR names one.
// BM_ColdSuite/<workload>/parallel*:N run the `cubby` tool built with this benchmark as a child
// process (`cubby warm`; $CUBBY_CLI names another).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <system_error>

#include "families.hpp"

namespace cubby_bench {
namespace {

const BenchWorkload& stored(BenchWorkload workload) {
  static std::map<std::string, std::unique_ptr<BenchWorkload>> kept;
  auto& slot = kept[workload.name];
  slot = std::make_unique<BenchWorkload>(std::move(workload));
  return *slot;
}

// Every family for every workload, in the order of families.hpp (names and order are what the
// dashboard and bench/results key on: `--benchmark_list_tests` shows them).
void register_all() {
  namespace w = cubby::workloads;
  for (const auto* workload :
       {&stored({"mdspan50", {w::mdspan50()}}), &stored({w::kMdspanSuiteName, w::mdspan_suite()}),
        &stored({"tiny", {w::tiny()}})}) {
    // One cold round of a multi-program workload is already many compiles.
    const benchmark::IterationCount rounds = workload->programs.size() > 1 ? 1 : 3;
    register_key_derive(workload);
    register_cold_compile(workload, rounds);
    register_cold_suite(workload, rounds);
    register_warm_hits(workload);
    register_remote(workload);
    register_hit_vs_load(workload);
    register_fleet_first_run_loaded(workload);
  }
}

}  // namespace
}  // namespace cubby_bench

int main(int argc, char** argv) {
  cubby_bench::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // Bumped when a family, counter or context key changes meaning; readers check it.
  benchmark::AddCustomContext("cubby_bench_schema", "2");
  benchmark::AddCustomContext("arch", cubby_bench::bench_arch());
  auto nvrtc = cubby::locate_nvrtc();
  benchmark::AddCustomContext("nvrtc", nvrtc ? nvrtc->version : "unavailable");
  auto gpu = cubby::gpu_status();
  benchmark::AddCustomContext("gpu", gpu ? "yes" : gpu.error().message);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!std::getenv("CUBBY_BENCH_DIR")) {
    std::error_code ignored;
    std::filesystem::remove_all(cubby_bench::bench_root(), ignored);
  }
  return 0;
}
