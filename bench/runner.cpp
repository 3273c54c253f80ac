#include "runner.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string_view>

#include "util/spawn.hpp"

// The `cubby` tool built with this benchmark (bench/CMakeLists.txt); empty: `cubby` on PATH.
#ifndef CUBBY_BENCH_CLI
#define CUBBY_BENCH_CLI ""
#endif

namespace cubby_bench {
namespace {

std::map<std::string, Bench>& benches() {
  static std::map<std::string, Bench> all;
  return all;
}

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

}  // namespace

fs::path bench_root() {
  static const fs::path root = [] {
    if (const char* dir = std::getenv("CUBBY_BENCH_DIR")) return fs::path(dir);
    std::random_device random;
    return fs::temp_directory_path() /
           ("cubby-bench-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
  }();
  return root;
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

void report_speedup(benchmark::State& state, const Bench& bench, double seconds) {
  if (bench.cold_seconds > 0 && seconds > 0) {
    state.counters["speedup_vs_cold"] = bench.cold_seconds / seconds;
  }
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

bool skip_without_gpu(benchmark::State& state) {
  auto status = cubby::gpu_status();
  if (status) return false;
  state.SkipWithError(("skipped: no GPU (" + status.error().message + ")").c_str());
  return true;
}

// Loads the module and resolves every name: with CUDA's lazy loading (the default since CUDA
// 12.2) cuModuleLoadData defers the per-kernel work to the first lookup, so a load without
// lookups is not the floor of a usable hit. BM_HitVsLoad and BM_FleetFirstRunLoaded do the same
// driver work through it.
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

// The `cubby` tool: $CUBBY_CLI, else the one built with this benchmark, else `cubby` on PATH.
std::string cubby_cli() {
  if (const char* cli = std::getenv("CUBBY_CLI"); cli != nullptr && *cli != '\0') return cli;
  const std::string built = CUBBY_BENCH_CLI;
  return built.empty() ? "cubby" : built;
}

// This process's environment for a `cubby warm` child, with CUBBY_PCH=1 (`pch`) or 0, and without
// the settings that would make it anything but a local cold run (a remote tier, a read-only or
// disabled cache, another store, a worker count, a suite to record).
std::vector<std::string> warm_environment(bool pch) {
  return cubby::child_environment({pch ? "CUBBY_PCH=1" : "CUBBY_PCH=0"},
                                  {"CUBBY_REMOTE=", "CUBBY_READ_ONLY=", "CUBBY_DISABLE=",
                                   "CUBBY_DIR=", "CUBBY_JOBS=", "CUBBY_SUITE="});
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

}  // namespace cubby_bench
