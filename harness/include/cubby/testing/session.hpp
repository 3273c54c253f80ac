// The harness's per-process session: one shared cubby::Cache for every test of the process,
// compile-through-the-cache with --cubby_require_warm enforcement, and the GPU skip reason.
// Every function is thread-safe.
#pragma once

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
// unstable key (a timestamp in the source, an unordered option list) shows up in CI.
// Throws cubby::Error as Cache::compile does.
CacheResult compile(const CompileRequest& request);

// The key fields of `request` as `cubby compile --explain` prints them, one per line.
std::string describe_key(const CompileRequest& request);

// Compiles of the running test that `compile` has already reported as require-warm failures
// (the listener fails the test for the others, e.g. direct cache().compile calls).
std::uint64_t reported_compiles();
void reset_reported_compiles();

// Why GPU tests must skip here (the driver's or the device's reason), or nullopt when a GPU can
// be used. Probes once per process.
std::optional<std::string> gpu_skip_reason();

}  // namespace cubby::testing
