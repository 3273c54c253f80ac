// What the benchmark families of cubby_bench share: the per-workload state and its warm store,
// the timing loop, the counters every family reports, fresh store folders, the cold round, the
// GPU helpers, and the process runner (the `cubby` tool as a child process).
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cubby/cubby.hpp"
#include "cubby_workloads.hpp"

namespace cubby_bench {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Per-workload state shared by the families: the requests (one per program), a warm store, and
// the times measured in this run.
struct Bench {
  std::vector<cubby::CompileRequest> requests;
  fs::path warm_dir;
  std::vector<std::shared_ptr<const cubby::Entry>> entries;  // warm entries (load baseline)
  std::vector<fs::path> entry_files;                         // their files (BM_HitVsLoad)
  double cold_seconds = 0;                                   // mean of BM_ColdCompile in this run
  double suite_serial_seconds = 0;  // mean of BM_ColdSuite/<workload>/serial in this run
  double disk_seconds = 0;          // mean of BM_WarmHitDisk in this run (a local warm run)
  double disk_served_seconds = 0;   // its part until every program is resolved (no exit work)
  double loaded_seconds = 0;        // BM_HitVsLoad's hit arm, open to finish (a local warm GPU run)
  std::set<std::string> remote_filled;  // the remotes (URLs) that hold the warm entries
};

// A benchmark workload: one or more NVRTC programs under one name.
struct BenchWorkload {
  std::string name;
  std::vector<cubby::workloads::Workload> programs;
};

// The store folders' parent: CUBBY_BENCH_DIR, else a temporary folder (removed by main).
fs::path bench_root();
// The remotes the remote families run against: each backend of CUBBY_BENCH_BACKENDS
// ("redis=redis://h:6379,rediss=rediss://h:6380,unix=unix:///s,cluster=redis://h:7000"), its name
// a suffix of the family's ("BM_WarmHitRemote/tiny/rediss"), so that one run compares them; else
// one unnamed backend, the URL empty: CUBBY_REMOTE's.
std::vector<std::pair<std::string, std::string>> bench_backends();

// CUBBY_ARCH, else GPU 0's architecture, else sm_90 (once per process).
std::string bench_arch();

// The default settings over the store folder `dir`.
cubby::Config config_at(const fs::path& dir);

// The state of `workload` (its requests made on first use; one per workload name).
Bench& bench_for(const BenchWorkload& workload);

// Makes sure the warm store holds the workload's entries (compiling once if needed).
void warm_up(Bench& bench);

// Counters every family reports: cubin_bytes, name_expressions, programs.
void add_common_counters(benchmark::State& state, const Bench& bench);

// Seconds from `start` to now (wall clock).
double seconds_since(Clock::time_point start);

// Runs `body` once per iteration and returns the mean seconds per iteration (wall clock); a
// skip (SkipWithError) ends the loop.
template <class Body>
double timed(benchmark::State& state, Body&& body) {
  const auto start = Clock::now();
  for (auto _ : state) {
    body();
    if (state.error_occurred()) break;  // google/benchmark requires leaving the loop after a skip
  }
  const double total = seconds_since(start);
  return state.iterations() > 0 ? total / static_cast<double>(state.iterations()) : 0;
}

// speedup_vs_cold: BM_ColdCompile of this run over `seconds`.
void report_speedup(benchmark::State& state, const Bench& bench, double seconds);

// A store folder no run has used: google/benchmark calls a family more than once, and
// CUBBY_BENCH_DIR may be reused, so folders are named by process and a counter.
fs::path fresh_dir(const std::string& family, const BenchWorkload& workload);

// Every program of `workload` compiled one after another in a fresh store (a cold run of a new
// process's cache), with NVRTC's automatic PCH when `pch`; the mean seconds of a round.
double cold_rounds(benchmark::State& state, const BenchWorkload& workload, Bench& bench, bool pch,
                   const std::string& tag);

// Skips the benchmark with the reason when no GPU is usable; true then.
bool skip_without_gpu(benchmark::State& state);

// Loads the module and resolves every name: with CUDA's lazy loading (the default since CUDA
// 12.2) cuModuleLoadData defers the per-kernel work to the first lookup, so a load without
// lookups is not the floor of a usable hit. BM_HitVsLoad and BM_FleetFirstRunLoaded do the same
// driver work through it.
void load_and_resolve(const std::shared_ptr<const cubby::Entry>& entry);

// The `cubby` tool: $CUBBY_CLI, else the one built with this benchmark, else `cubby` on PATH.
std::string cubby_cli();

// This process's environment for a `cubby warm` child, with CUBBY_PCH=1 (`pch`) or 0, and without
// the settings that would make it anything but a local cold run (a remote tier, a read-only or
// disabled cache, another store, a worker count, a suite to record).
std::vector<std::string> warm_environment(bool pch);

// What a child process did.
struct ToolRun {
  int exit_code = -1;      // 128 + signal when a signal ended it; -1 when it could not be started
  std::string out;         // its stdout
  std::string error;       // why it could not be started, else the last line of its stderr
  double cpu_seconds = 0;  // user + system CPU time of it and the descendants it waited for
};

// Runs `argv` (argv[0] searched on PATH when it holds no '/') with environment `env`, no stdin,
// stdout into file `out` and stderr into file `err`, and waits for it to end.
ToolRun run_tool(std::vector<std::string> argv, std::vector<std::string> env, const fs::path& out,
                 const fs::path& err);

}  // namespace cubby_bench
