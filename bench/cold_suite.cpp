// BM_ColdSuite/<workload>/...: a cold suite compiled serially in this process (without and with
// PCH) and by `cubby warm` in N worker processes (the process runner of runner.hpp).
#include <nlohmann/json.hpp>

#include "families.hpp"
#include "format/recipe.hpp"
#include "storage/local/manifests.hpp"
#include "storage/local/store_stats.hpp"
#include "util/process.hpp"

namespace cubby_bench {
namespace {

// The counters of every BM_ColdSuite variant beside the common ones, for a round of `seconds`:
// seconds_per_program (wall time over programs: the throughput) and speedup_vs_serial
// (BM_ColdSuite/<workload>/serial of this run over this variant; 1 for serial itself).
void report_suite_counters(benchmark::State& state, const Bench& bench, double seconds) {
  add_common_counters(state, bench);
  if (bench.requests.empty() || seconds <= 0) return;
  state.counters["seconds_per_program"] = seconds / static_cast<double>(bench.requests.size());
  if (bench.suite_serial_seconds > 0) {
    state.counters["speedup_vs_serial"] = bench.suite_serial_seconds / seconds;
  }
}

// A cold suite compiled serially in this process without PCH (`serial`) and with it (`pch`):
// what PCH saves. `serial` is the baseline of the variants registered after it.
void BM_ColdSuite(benchmark::State& state, const BenchWorkload* workload, bool pch) {
  Bench& bench = bench_for(*workload);
  const double seconds =
      cold_rounds(state, *workload, bench, pch, pch ? "suite-pch" : "suite-serial");
  if (!pch) bench.suite_serial_seconds = seconds;
  report_suite_counters(state, bench, seconds);
}

// The worker counts of BM_ColdSuite/<workload>/parallel:N for a workload of `programs` programs:
// those of 2, 4, 8, 16 not above the cores (2 always), none above `programs` (`cubby warm` never
// starts more workers than it has programs, so a one-program workload gets none).
std::vector<unsigned> parallel_jobs(std::size_t programs) {
  std::vector<unsigned> jobs;
  for (const unsigned n : {2U, 4U, 8U, 16U}) {
    if (n <= programs && (n == 2 || n <= cubby::usable_cores())) jobs.push_back(n);
  }
  return jobs;
}

// Writes suite `suite`'s manifest into the store at `dir`: a recipe per program of `bench`, in
// order (what a recorded run of the workload leaves there).
cubby::Result<void> write_manifest(const fs::path& dir, const std::string& suite,
                                   const Bench& bench) {
  cubby::Manifest manifest;
  manifest.suite = suite;
  for (const auto& request : bench.requests) {
    manifest.recipes.push_back(cubby::recipe_of(request, cubby::KeyInputs{}));
  }
  return cubby::save_manifest(dir, manifest);
}

// Checks the run of `cubby warm --json` over `programs` programs on a cold store: it printed a
// summary, compiled every program, none failed and warming did not stop. Returns why not, or ""
// (and `jobs`: the workers it ran).
std::string check_warm(const ToolRun& run, std::size_t programs, double& jobs) {
  if (run.exit_code < 0) return run.error;
  const std::string exited = "cubby warm exited " + std::to_string(run.exit_code);
  try {
    const auto summary = nlohmann::json::parse(run.out);
    jobs = summary.at("jobs").get<double>();
    const auto compiled = summary.at("compiled").get<std::size_t>();
    const auto& failed = summary.at("failed");
    const auto stopped = summary.at("stopped").get<std::string>();
    if (!failed.empty()) {
      return exited + ": " + std::to_string(failed.size()) + " of " + std::to_string(programs) +
             " programs failed (first: " + failed.front().value("error", std::string("?")) + ")";
    }
    if (!stopped.empty()) return exited + ": warming stopped (" + stopped + ")";
    if (compiled != programs) {
      return exited + ": compiled " + std::to_string(compiled) + " of " + std::to_string(programs) +
             " programs (a cold store must compile them all)";
    }
  } catch (const nlohmann::json::exception& error) {
    return exited + " without a usable --json summary (" + error.what() + "; stderr: " + run.error +
           ")";
  }
  return "";
}

// A cold suite compiled by `cubby warm` in `jobs` worker processes, with CUBBY_PCH=1 (`pch`) or 0,
// from the suite's manifest: what a prefetch does after a header edit, a toolchain upgrade or on
// a fresh runner. Each iteration writes the manifest of the workload's programs (suite
// bench-<workload>) into a fresh, empty store (untimed), then times the whole
// `cubby warm --suite bench-<workload> -j N --json --dir STORE` process (wall clock: its start,
// key derivation, workers, exit). Skips with the reason unless it compiled every program and
// none failed. Counters: jobs (the workers it ran), cpu_s (CPU seconds of the tool and its
// workers per round; the CPU column counts this process only), pch_created / pch_reused (its
// workers' sums, from the store's counters) and those of every BM_ColdSuite variant.
void BM_ColdSuiteParallel(benchmark::State& state, const BenchWorkload* workload, unsigned jobs,
                          bool pch) {
  Bench& bench = bench_for(*workload);
  const std::string suite = "bench-" + workload->name;
  const std::vector<std::string> env = warm_environment(pch);
  double tool_seconds = 0;
  double cpu_seconds = 0;
  double workers = 0;
  cubby::Counters counters;
  for (auto _ : state) {
    state.PauseTiming();
    const fs::path dir = fresh_dir(pch ? "suite-parallel-pch" : "suite-parallel", *workload);
    if (auto written = write_manifest(dir, suite, bench); !written) {
      state.SkipWithError(("cannot write the manifest: " + written.error().message).c_str());
      break;
    }
    const std::vector<std::string> argv = {cubby_cli(), "warm",  "--suite",
                                           suite,       "-j",    std::to_string(jobs),
                                           "--json",    "--dir", dir.string()};
    state.ResumeTiming();
    const auto start = Clock::now();
    const ToolRun run = run_tool(argv, env, dir.string() + ".out", dir.string() + ".err");
    tool_seconds += seconds_since(start);
    state.PauseTiming();
    cpu_seconds += run.cpu_seconds;
    const std::string problem = check_warm(run, bench.requests.size(), workers);
    if (!problem.empty()) {
      state.SkipWithError(problem.c_str());
      break;
    }
    if (auto read = cubby::StoreStats(dir).read()) counters = std::move(*read);
    state.ResumeTiming();
  }
  if (state.error_occurred() || state.iterations() == 0) return;
  state.counters["jobs"] = workers;
  state.counters["cpu_s"] = cpu_seconds / static_cast<double>(state.iterations());
  state.counters["pch_created"] = static_cast<double>(counters["pch_created"]);
  state.counters["pch_reused"] = static_cast<double>(counters["pch_reused"]);
  report_suite_counters(state, bench, tool_seconds / static_cast<double>(state.iterations()));
}

}  // namespace

// BM_ColdSuite/<workload>/{serial,pch}, then parallel:N and parallel_pch:N for each N of
// parallel_jobs (serial first: the others report their speedup over it).
void register_cold_suite(const BenchWorkload* workload, benchmark::IterationCount rounds) {
  const std::string prefix = "BM_ColdSuite/" + workload->name;
  for (const bool pch : {false, true}) {
    benchmark::RegisterBenchmark(
        (prefix + (pch ? "/pch" : "/serial")).c_str(),
        [workload, pch](benchmark::State& state) { BM_ColdSuite(state, workload, pch); })
        ->Unit(benchmark::kMillisecond)
        ->Iterations(rounds)
        ->UseRealTime();
  }
  for (const unsigned jobs : parallel_jobs(workload->programs.size())) {
    for (const bool pch : {false, true}) {
      benchmark::RegisterBenchmark(
          (prefix + (pch ? "/parallel_pch:" : "/parallel:") + std::to_string(jobs)).c_str(),
          [workload, jobs, pch](benchmark::State& state) {
            BM_ColdSuiteParallel(state, workload, jobs, pch);
          })
          ->Unit(benchmark::kMillisecond)
          ->Iterations(rounds)
          ->UseRealTime();
    }
  }
}

}  // namespace cubby_bench
