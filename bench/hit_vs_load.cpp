// BM_HitVsLoad/<workload>: the hit path against its physical floor on a GPU (module loads of the
// decoded entries), measured interleaved; its hit arm is a local warm GPU run for
// BM_FleetFirstRunLoaded.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>

#include "families.hpp"
#include "storage/local/disk.hpp"
#include "util/io.hpp"

namespace cubby_bench {
namespace {

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

}  // namespace

void register_hit_vs_load(const BenchWorkload* workload) {
  // Pairs: a multi-program pass takes ~50 ms per arm on an H200, a tiny one ~0.2 ms.
  benchmark::RegisterBenchmark(("BM_HitVsLoad/" + workload->name).c_str(), BM_HitVsLoad, workload)
      ->Unit(benchmark::kMicrosecond)
      ->Iterations(workload->programs.size() > 1 ? 30 : (workload->name == "tiny" ? 400 : 100))
      ->UseManualTime();
}

}  // namespace cubby_bench
