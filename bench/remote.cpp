// The remote tier: BM_WarmHitRemote (a hit of a fresh runner), BM_RemoteGet (GETs raw or LZ4),
// BM_FleetFirstRun and BM_FleetFirstRunLoaded (a fleet runner's first run served by the remote),
// against each backend of CUBBY_BENCH_BACKENDS or CUBBY_REMOTE's; skipped at once without one.
#include "storage/remote/remote.hpp"

#include <cstdlib>
#include <functional>
#include <optional>
#include <random>

#include "families.hpp"
#include "storage/local/disk.hpp"
#include "util/hash.hpp"

namespace cubby_bench {
namespace {

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

// True when a remote is configured (CUBBY_REMOTE or CUBBY_BENCH_BACKENDS): without one, every
// remote family runs one iteration, skipped at once.
bool remote_configured() {
  const char* remote_url = std::getenv("CUBBY_REMOTE");
  return (remote_url != nullptr && *remote_url != '\0') || !bench_backends().front().first.empty();
}

}  // namespace

void register_remote(const BenchWorkload* workload) {
  const std::string& name = workload->name;
  const bool remote = remote_configured();
  for (const auto& [backend, url] : bench_backends()) {
    const std::string suffix = backend.empty() ? "" : "/" + backend;
    auto* remote_family =
        benchmark::RegisterBenchmark(("BM_WarmHitRemote/" + name + suffix).c_str(),
                                     BM_WarmHitRemote, workload, url)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
    auto* fleet_family = benchmark::RegisterBenchmark(("BM_FleetFirstRun/" + name + suffix).c_str(),
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
}

void register_fleet_first_run_loaded(const BenchWorkload* workload) {
  auto* family = benchmark::RegisterBenchmark(("BM_FleetFirstRunLoaded/" + workload->name).c_str(),
                                              BM_FleetFirstRunLoaded, workload)
                     ->Unit(benchmark::kMicrosecond)
                     ->UseRealTime();
  if (!remote_configured()) family->Iterations(1);  // skipped at once: no Redis
}

}  // namespace cubby_bench
