// cubby's Google Benchmark suite: cold vs warm for the templated mdspan workloads.
//
// Family names are a contract dashboards key on: BM_<Family>/<workload>. Families run in the
// order registered, so every warm family can report its speedup over the cold compile measured
// in the same run (counter `speedup_vs_cold`). GPU families skip with the reason when no GPU is
// usable. The store is a fresh temporary folder unless CUBBY_BENCH_DIR names one.
// BM_ColdSuite/<workload>/parallel*:N run the `cubby` tool built with this benchmark as a child
// process (`cubby warm`; $CUBBY_CLI names another).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cubby/cubby.hpp"
#include "cubby_workloads.hpp"
#include "format/recipe.hpp"
#include "storage/local/disk.hpp"
#include "storage/local/manifests.hpp"
#include "storage/local/store_stats.hpp"
#include "storage/remote/remote.hpp"
#include "util/hash.hpp"
#include "util/io.hpp"
#include "util/process.hpp"
#include "util/spawn.hpp"

// The `cubby` tool built with this benchmark (bench/CMakeLists.txt); empty: `cubby` on PATH.
#ifndef CUBBY_BENCH_CLI
#define CUBBY_BENCH_CLI ""
#endif

namespace {

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

// Seconds from `start` to now (wall clock).
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs `body` once per iteration and returns the mean seconds per iteration (wall clock).
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

// A store folder no run has used: google/benchmark calls a family more than once, and
// CUBBY_BENCH_DIR may be reused, so folders are named by process and a counter.
fs::path fresh_dir(const std::string& family, const BenchWorkload& workload) {
  static int round = 0;
  return bench_root() / (family + "-" + workload.name + "-" + std::to_string(::getpid()) + "-" +
                         std::to_string(round++));
}

// Every program of `workload` compiled one after another in a fresh store (a cold run of a new
// process's cache), with NVRTC's automatic PCH when `pch`; the mean seconds of a round.
double cold_rounds(benchmark::State& state, const BenchWorkload& workload, Bench& bench, bool pch,
                   const std::string& tag) {
  return timed(state, [&] {
    state.PauseTiming();
    // Every round of every repetition (--benchmark_repetitions calls the family again) gets a
    // store folder of its own, and with it a PCH folder of its own: each starts cold.
    const fs::path dir = fresh_dir(tag, workload);
    state.ResumeTiming();
    cubby::Config config = config_at(dir);
    config.pch = pch;
    cubby::Cache cache(config);
    for (const auto& request : bench.requests) {
      auto result = cache.compile(request);
      if (result.hit) {
        state.SkipWithError("cold compile hit the cache");
        return;
      }
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

// The `cubby` tool: $CUBBY_CLI, else the one built with this benchmark, else `cubby` on PATH.
std::string cubby_cli() {
  if (const char* cli = std::getenv("CUBBY_CLI"); cli != nullptr && *cli != '\0') return cli;
  const std::string built = CUBBY_BENCH_CLI;
  return built.empty() ? "cubby" : built;
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

// This process's environment for a `cubby warm` child, with CUBBY_PCH=1 (`pch`) or 0, and without
// the settings that would make it anything but a local cold run (a remote tier, a read-only or
// disabled cache, another store, a worker count, a suite to record).
std::vector<std::string> warm_environment(bool pch) {
  return cubby::child_environment({pch ? "CUBBY_PCH=1" : "CUBBY_PCH=0"},
                                  {"CUBBY_REMOTE=", "CUBBY_READ_ONLY=", "CUBBY_DISABLE=",
                                   "CUBBY_DIR=", "CUBBY_JOBS=", "CUBBY_SUITE="});
}

// What a child process did.
struct ToolRun {
  int exit_code = -1;      // 128 + signal when a signal ended it; -1 when it could not be started
  std::string out;         // its stdout
  std::string error;       // why it could not be started, else the last line of its stderr
  double cpu_seconds = 0;  // user + system CPU time of it and the descendants it waited for
};

// User + system CPU seconds of this process's children that have ended and were waited for.
double children_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  const auto seconds = [](const timeval& time) {
    return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `argv` (argv[0] searched on PATH when it holds no '/') with environment `env`, no stdin,
// stdout into file `out` and stderr into file `err`, and waits for it to end.
ToolRun run_tool(std::vector<std::string> argv, std::vector<std::string> env, const fs::path& out,
                 const fs::path& err) {
  const double cpu_before = children_cpu_seconds();
  const std::string program = argv.front();
  const auto pid = cubby::spawn(
      {program,
       std::move(argv),
       std::move(env),
       {cubby::ChildFd::open(STDIN_FILENO, "/dev/null", O_RDONLY),
        cubby::ChildFd::open(STDOUT_FILENO, out.string(), O_WRONLY | O_CREAT | O_TRUNC),
        cubby::ChildFd::open(STDERR_FILENO, err.string(), O_WRONLY | O_CREAT | O_TRUNC)}});
  ToolRun run;
  if (!pid) {
    run.error = pid.error().message + ": build the cubby target or set CUBBY_CLI to the tool";
    return run;
  }
  run.exit_code = cubby::wait_exit_code(*pid);
  run.cpu_seconds = children_cpu_seconds() - cpu_before;
  run.out = read_text(out);
  std::string errors = read_text(err);
  while (!errors.empty() && errors.back() == '\n') errors.pop_back();
  run.error = errors.substr(errors.find_last_of('\n') + 1);
  return run;
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

// The remote settings of the environment (CUBBY_REMOTE, CUBBY_REMOTE_SECRET, ...) over a store
// folder, with `url` as the remote when it is not empty (a backend of CUBBY_BENCH_BACKENDS);
// nullopt (and the benchmark skipped) without a remote.
std::optional<cubby::Config> remote_config(benchmark::State& state, const fs::path& dir,
                                           const std::string& url = {}) {
  auto env = cubby::Config::from_env();
  if (env && !url.empty()) env->remote_url = url;
  if (!env || env->remote_url.empty()) {
    state.SkipWithError(
        "skipped: no remote (set CUBBY_REMOTE=redis://HOST:PORT or http://HOST:PORT/PREFIX to run "
        "it)");
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
  if (bench.remote_filled.count(config.remote_url) != 0) return true;
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
  bench.remote_filled.insert(config.remote_url);
  return true;
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
  served_seconds += seconds_since(start);
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
void BM_WarmHitRemote(benchmark::State& state, const BenchWorkload* workload,
                      const std::string& url) {
  Bench& bench = bench_for(*workload);
  auto config = remote_config(state, bench_root() / "unused", url);
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
void BM_RemoteGet(benchmark::State& state, const BenchWorkload* workload, bool compress,
                  const std::string& url) {
  Bench& bench = bench_for(*workload);
  auto config = remote_config(state, bench_root() / "unused", url);
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
  const std::uint64_t before = tier ? tier->counters().remote_bytes_read : 0;
  for (auto _ : state) {
    for (const auto& key : keys) {
      auto value = tier->get(key);
      if (!value || !value->has_value()) state.SkipWithError("not served by the remote");
      benchmark::DoNotOptimize(value);
    }
  }
  add_common_counters(state, bench);
  if (state.iterations() > 0 && tier) {
    state.counters["wire_bytes"] =
        static_cast<double>(tier->counters().remote_bytes_read - before) /
        static_cast<double>(state.iterations());
  }
}

// The fleet simulation: runner A has published the workload; runner B (a second store folder)
// makes its first run, served by Redis, and its second run is local. A run is one fresh Cache
// (as a new process has) resolving every program of the workload (mdspan-suite: 25 programs).
// The time is B's first run; counters compare it with a local warm run (BM_WarmHitDisk,
// ratio_vs_local_warm and served_ratio_vs_local_warm) and with cold (speedup_vs_cold), all
// measured in this run.
void BM_FleetFirstRun(benchmark::State& state, const BenchWorkload* workload,
                      const std::string& url) {
  Bench& bench = bench_for(*workload);
  auto config = remote_config(state, bench_root() / "unused", url);
  if (!config || !fill_remote(state, bench, *config)) return;
  double first_run_seconds = 0;  // B's first runs only (the second runs are untimed)
  double served_seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    config->dir = fresh_dir("fleet", *workload);
    state.ResumeTiming();
    const auto start = Clock::now();
    const bool served = fresh_runner(state, bench, *config, served_seconds);
    first_run_seconds += seconds_since(start);
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

// Fresh copies of `entries` (new allocations, as a hit delivers), made untimed by the callers.
std::vector<std::shared_ptr<const cubby::Entry>> fresh_copies(
    const std::vector<std::shared_ptr<const cubby::Entry>>& entries) {
  std::vector<std::shared_ptr<const cubby::Entry>> copies;
  copies.reserve(entries.size());
  for (const auto& entry : entries) copies.push_back(std::make_shared<const cubby::Entry>(*entry));
  return copies;
}

// One pass of BM_HitVsLoad over a workload's programs, in seconds: `lookup` (cache.compile, a disk
// hit) and `load` (load_and_resolve) summed over the programs; `open` and `finish` are the
// Cache's construction and destruction around them (a process's fixed costs).
struct Pass {
  double lookup = 0;
  double load = 0;
  double open = 0;
  double finish = 0;
  bool all_disk_hits = true;  // false: a lookup was not served by the warm store's disk tier
};

// The arms of BM_HitVsLoad. `bare` is the floor (fresh copies of the decoded entries, made
// untimed, loaded back to back); `hit` is what a test does (a fresh Cache on the warm store:
// lookup, load, lookup, load, ...). The other two find where a gap between them comes from:
// `hits_then_loads` loads the hits' own buffers after all lookups (no lookup work between loads),
// `hits_then_copies` loads untimed copies of them (the hits' work done, their buffers not used).
// `read_files` only reads the entries' files into new memory (timed as `lookup`): the part of a
// lookup no cache can skip, so (bare load + read) / bare load is the floor of `ratio`.
enum class Arm { bare, hit, hits_then_loads, hits_then_copies, read_files };
constexpr std::array kArms = {Arm::bare, Arm::hit, Arm::hits_then_loads, Arm::hits_then_copies,
                              Arm::read_files};

// The warm store's entry file of each program of `bench`.
std::vector<fs::path> entry_files_of(const Bench& bench) {
  cubby::Cache cache(config_at(bench.warm_dir));
  const cubby::DiskTier disk(bench.warm_dir);
  std::vector<fs::path> files;
  for (const auto& request : bench.requests) files.push_back(disk.path_of(cache.key_of(request)));
  return files;
}

Pass run_arm(const Bench& bench, Arm arm) {
  Pass pass;
  if (arm == Arm::read_files) {
    const auto start = Clock::now();
    for (const auto& file : bench.entry_files) {
      auto bytes = cubby::io::read_file(file);
      pass.all_disk_hits = pass.all_disk_hits && bytes.ok();
      benchmark::DoNotOptimize(bytes);
    }
    pass.lookup = seconds_since(start);
    return pass;
  }
  if (arm == Arm::bare) {
    auto copies = fresh_copies(bench.entries);
    const auto start = Clock::now();
    for (const auto& entry : copies) load_and_resolve(entry);
    pass.load = seconds_since(start);
    return pass;
  }
  auto start = Clock::now();
  std::optional<cubby::Cache> cache(std::in_place, config_at(bench.warm_dir));
  pass.open = seconds_since(start);
  std::vector<std::shared_ptr<const cubby::Entry>> hits;
  for (const auto& request : bench.requests) {
    start = Clock::now();
    auto result = cache->compile(request);
    pass.lookup += seconds_since(start);
    pass.all_disk_hits = pass.all_disk_hits && result.tier == cubby::Source::disk;
    if (arm == Arm::hit) {
      start = Clock::now();
      load_and_resolve(result.entry);
      pass.load += seconds_since(start);
    } else {
      hits.push_back(std::move(result.entry));
    }
  }
  if (arm == Arm::hits_then_copies) hits = fresh_copies(hits);
  start = Clock::now();
  for (const auto& entry : hits) load_and_resolve(entry);
  if (!hits.empty()) pass.load = seconds_since(start);
  hits.clear();
  start = Clock::now();
  cache.reset();
  pass.finish = seconds_since(start);
  return pass;
}

// The `q` quantile (0..1, nearest rank) of `values`; 0 when empty.
double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank =
      static_cast<std::size_t>(std::lround(q * static_cast<double>(values.size() - 1)));
  return values[std::min(rank, values.size() - 1)];
}

// BM_HitVsLoad's counters from its per-pass samples (one Pass per arm per iteration).
void report_hit_vs_load(benchmark::State& state, Bench& bench,
                        const std::map<Arm, std::vector<Pass>>& samples) {
  const auto& bare = samples.at(Arm::bare);
  const auto& hit = samples.at(Arm::hit);
  std::vector<double> ratios;
  std::vector<double> ratios_open;
  const auto column = [&](Arm arm, auto field) {
    std::vector<double> values;
    for (const Pass& pass : samples.at(arm)) values.push_back(field(pass) * 1e6);
    return quantile(values, 0.5);
  };
  const auto& read = samples.at(Arm::read_files);
  std::vector<double> floors;
  for (std::size_t i = 0; i < std::min(bare.size(), hit.size()); ++i) {
    if (bare[i].load <= 0) continue;
    if (i < read.size()) floors.push_back((bare[i].load + read[i].lookup) / bare[i].load);
    ratios.push_back((hit[i].lookup + hit[i].load) / bare[i].load);
    ratios_open.push_back((hit[i].open + hit[i].lookup + hit[i].load + hit[i].finish) /
                          bare[i].load);
  }
  if (ratios.empty()) return;
  state.counters["pairs"] = static_cast<double>(ratios.size());
  state.counters["ratio"] = quantile(ratios, 0.5);
  state.counters["ratio_p10"] = quantile(ratios, 0.1);
  state.counters["ratio_p90"] = quantile(ratios, 0.9);
  state.counters["ratio_min"] = quantile(ratios, 0);
  state.counters["ratio_max"] = quantile(ratios, 1);
  state.counters["ratio_with_open"] = quantile(ratios_open, 0.5);
  state.counters["floor_ratio"] = quantile(floors, 0.5);  // (bare load + reading the files) / bare
  state.counters["read_files_us"] = column(Arm::read_files, [](const Pass& p) { return p.lookup; });
  state.counters["load_us"] = column(Arm::bare, [](const Pass& p) { return p.load; });
  state.counters["hit_load_us"] = column(Arm::hit, [](const Pass& p) { return p.lookup + p.load; });
  state.counters["hit_us"] = column(Arm::hit, [](const Pass& p) { return p.lookup; });
  state.counters["load_in_hit_us"] = column(Arm::hit, [](const Pass& p) { return p.load; });
  state.counters["open_us"] = column(Arm::hit, [](const Pass& p) { return p.open; });
  state.counters["finish_us"] = column(Arm::hit, [](const Pass& p) { return p.finish; });
  // The same lookups back to back (no module load between them to evict the CPU's caches).
  state.counters["hit_back_to_back_us"] =
      column(Arm::hits_then_loads, [](const Pass& p) { return p.lookup; });
  state.counters["load_of_hit_bytes_us"] =
      column(Arm::hits_then_loads, [](const Pass& p) { return p.load; });
  state.counters["load_of_copied_hits_us"] =
      column(Arm::hits_then_copies, [](const Pass& p) { return p.load; });
  // A local warm GPU run, as BM_FleetFirstRunLoaded's comparison: a whole process's lookups.
  bench.loaded_seconds =
      column(Arm::hit, [](const Pass& p) { return p.open + p.lookup + p.load + p.finish; }) / 1e6;
}

// The hit path against its physical floor, measured interleaved: every iteration runs each arm
// once (see Arm), starting at a different arm each time, so that drift of the machine (clocks,
// other tenants, the driver's state) reaches all arms alike. `ratio` is the median over the
// iterations of hit / bare (lookups + loads over loads; the Cache's construction and finish,
// a process's fixed costs, are `open_us` / `finish_us` and `ratio_with_open`), with its spread
// (`ratio_p10`..`ratio_p90`, `ratio_min`, `ratio_max`). The benchmark's time is the hit arm's.
void BM_HitVsLoad(benchmark::State& state, const BenchWorkload* workload) {
  if (skip_without_gpu(state)) return;
  Bench& bench = bench_for(*workload);
  warm_up(bench);
  (void)cubby::ensure_context();
  if (bench.entry_files.empty()) bench.entry_files = entry_files_of(bench);
  for (const Arm arm : kArms) (void)run_arm(bench, arm);  // one-time context and file costs
  std::map<Arm, std::vector<Pass>> samples;
  std::size_t round = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < kArms.size(); ++i) {
      const Arm arm = kArms[(round + i) % kArms.size()];
      samples[arm].push_back(run_arm(bench, arm));
      if (!samples[arm].back().all_disk_hits) state.SkipWithError("a lookup was not a disk hit");
    }
    const Pass& hit = samples[Arm::hit].back();
    state.SetIterationTime(hit.lookup + hit.load);
    ++round;
  }
  add_common_counters(state, bench);
  report_hit_vs_load(state, bench, samples);
}

// The fleet simulation as a GPU run: runner B's first run on a fresh store folder, every program
// served by Redis, then loaded and every name resolved, as a test uses its kernels. Its
// ratio_vs_local_warm compares it with BM_HitVsLoad's hit arm of this run (the same run served by a
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

// The remotes the remote families run against: each backend of CUBBY_BENCH_BACKENDS
// ("redis=redis://h:6379,rediss=rediss://h:6380,unix=unix:///s,cluster=redis://h:7000"), its name
// a suffix of the family's ("BM_WarmHitRemote/tiny/rediss"), so that one run compares them; else
// the one CUBBY_REMOTE names, without a suffix.
std::vector<std::pair<std::string, std::string>> bench_backends() {
  std::vector<std::pair<std::string, std::string>> out;
  const char* list = std::getenv("CUBBY_BENCH_BACKENDS");
  std::string_view rest = list != nullptr ? list : "";
  while (!rest.empty()) {
    const std::string_view item = rest.substr(0, rest.find(','));
    rest.remove_prefix(std::min(item.size() + 1, rest.size()));
    const auto equals = item.find('=');
    if (equals != std::string_view::npos && equals > 0) {
      out.emplace_back(std::string(item.substr(0, equals)), std::string(item.substr(equals + 1)));
    }
  }
  if (out.empty()) out.emplace_back("", "");  // CUBBY_REMOTE's, as before
  return out;
}

void register_all() {
  namespace w = cubby::workloads;
  const char* remote_url = std::getenv("CUBBY_REMOTE");
  const bool remote =
      (remote_url != nullptr && *remote_url != '\0') || !bench_backends().front().first.empty();
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
    register_cold_suite(workload, rounds);
    benchmark::RegisterBenchmark(("BM_WarmHitMemory/" + name).c_str(), BM_WarmHitMemory, workload)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("BM_WarmHitDisk/" + name).c_str(), BM_WarmHitDisk, workload)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    for (const auto& [backend, url] : bench_backends()) {
      const std::string suffix = backend.empty() ? "" : "/" + backend;
      auto* remote_family =
          benchmark::RegisterBenchmark(("BM_WarmHitRemote/" + name + suffix).c_str(),
                                       BM_WarmHitRemote, workload, url)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
      auto* fleet_family =
          benchmark::RegisterBenchmark(("BM_FleetFirstRun/" + name + suffix).c_str(),
                                       BM_FleetFirstRun, workload, url)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
      for (const bool compress : {false, true}) {
        auto* get_family = benchmark::RegisterBenchmark(
            ("BM_RemoteGet/" + name + (compress ? "/lz4" : "/raw") + suffix).c_str(), BM_RemoteGet,
            workload, compress, url);
        get_family->Unit(benchmark::kMicrosecond)->UseRealTime();
        if (!remote) get_family->Iterations(1);
      }
      if (!remote) {  // skipped at once: no Redis
        remote_family->Iterations(1);
        fleet_family->Iterations(1);
      }
    }
    // Pairs: a multi-program pass takes ~50 ms per arm on an H200, a tiny one ~0.2 ms.
    benchmark::RegisterBenchmark(("BM_HitVsLoad/" + name).c_str(), BM_HitVsLoad, workload)
        ->Unit(benchmark::kMicrosecond)
        ->Iterations(workload->programs.size() > 1 ? 30 : (name == "tiny" ? 400 : 100))
        ->UseManualTime();
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
