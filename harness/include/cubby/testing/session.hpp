// The harness's per-process session: one shared cubby::Cache for every test of the process,
// compile-through-the-cache with --cubby_require_warm enforcement, and the GPU skip reason.
// Every function is thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cubby/cache.hpp"
#include "cubby/nvrtc.hpp"
#include "cubby/testing/options.hpp"

namespace cubby::testing {

// Sets the options of this process's session. Called by Environment; a later call replaces
// them, but the cache keeps the folder it was opened with (`cache()` opens it on first use).
void configure(const Options& options);
Options current_options();

// The process's shared cache, opened on first use from Config::from_env() with
// `current_options().dir` when that is set. Throws cubby::Error on a malformed CUBBY_* variable.
Cache& cache();

// cache().compile(request); on a compile (a miss) with require_warm set, adds a non-fatal failure
// to the running test (or test suite) naming the program and listing every key field, so that an
// unstable key (a timestamp in the source, an unordered option list) shows up in CI; a program
// compiled without the store fails with its reason and detail instead (CacheResult::uncached).
// Throws cubby::Error as Cache::compile does.
CacheResult compile(const CompileRequest& request);

// Starts the prefetch of the session's suite (cubby/prefetch.hpp: the kernels an earlier run of
// this test binary recorded compile in worker processes while the tests run) and returns what is
// worth telling the user about it ("" when nothing is). The suite is CUBBY_SUITE, else the test
// binary's file name. The Environment calls it in SetUp, from the main thread.
std::string start_prefetch();
// Stops it (the Environment's TearDown); idempotent.
void stop_prefetch();

// Wall time spent inside the shared cache by `compile` (every KernelTest::compile goes through
// it), summed over calls; each call is counted once. Calls that bypass `compile` (e.g.
// cache().compile) are not timed. What a warm suite spends in cubby: the lookups (key derivation,
// memory or disk read, entry decode and checks), and NVRTC's one-time loading in the first one.
struct LookupTime {
  std::uint64_t hits = 0;    // calls served from the store (memory, disk or remote)
  double hit_ms = 0;         // their CacheResult::elapsed_ms
  std::uint64_t misses = 0;  // calls that compiled
  double miss_ms = 0;        // their elapsed_ms: lookup, NVRTC compile and store
  // Resolving the default architecture from the GPU (cuInit and a device query; once per
  // process, before the first call without an arch). Kept out of hit_ms and miss_ms because a
  // suite that launches kernels initialises the driver anyway.
  double arch_probe_ms = 0;
};

// This process's totals so far.
LookupTime lookup_time();
// `after - before`, field by field.
LookupTime difference(const LookupTime& after, const LookupTime& before);

// The key fields of `request` as `cubby compile --explain` prints them (format_key_fields).
std::string describe_key(const CompileRequest& request);

// Compiles of the running test that `compile` has already reported as require-warm failures
// (the listener fails the test for the others, e.g. direct cache().compile calls).
std::uint64_t reported_compiles();
void reset_reported_compiles();

// Why GPU tests must skip here (the driver's or the device's reason), or nullopt when a GPU can
// be used. Probes once per process.
std::optional<std::string> gpu_skip_reason();

}  // namespace cubby::testing
