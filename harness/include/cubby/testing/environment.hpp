// cubby::testing::Environment: register it with ::testing::AddGlobalTestEnvironment (or link
// cubby::gtest_main, which does it and parses the --cubby_ flags). It
//   - configures the shared store (Options: CUBBY_DIR / --cubby_dir=, require_warm),
//   - installs the Listener (per-test cache properties) when constructed,
//   - at the end of each iteration prints one summary line (hits by tier and the time their
//     lookups took, compiles, compile time saved) and records the iteration's totals as
//     properties of the whole run (attributes of <testsuites> in --gtest_output=xml, fields of the
//     top object in json): the Listener's properties plus cubby_arch_probe_ms and cubby_dir.
#pragma once

#include <gtest/gtest.h>

#include "cubby/cache.hpp"
#include "cubby/testing/options.hpp"
#include "cubby/testing/session.hpp"

namespace cubby::testing {

class Environment : public ::testing::Environment {
 public:
  // Throws cubby::Error (invalid_argument) on a malformed CUBBY_REQUIRE_WARM.
  Environment();
  explicit Environment(Options options);

  void SetUp() override;
  void TearDown() override;

  const Options& options() const { return options_; }

 private:
  Options options_;
  Stats start_{};
  LookupTime time_start_{};
};

// The one-line summary of `stats` and `time` (what Environment prints): the lines of
// cubby::summary_lines (cubby/stats_summary.hpp: the wording the pytest plugin and `cubby stats`
// share; with this process's first program of each reason one was compiled without the store:
// "2 of 9 programs compiled without the store: <reason>, first <detail>") joined by "; ", then the
// time the hits' lookups took (time.hit_ms, when time.hits is not 0) and the store, e.g. "[cubby]
// hits: 24 (memory 0, disk 24, remote 0), misses: 0, compiles: 0 (0.00 s), compile time
// saved: 31.20 s; hit lookups: 3.2 ms; store /tmp/s".
std::string summary_line(const Stats& stats, const LookupTime& time, const std::string& store);

// `after - before`, field by field (cubby/cache.hpp).
using ::cubby::difference;

// Parses the --cubby_ flags (see options.hpp), initialises GoogleTest, and registers an
// Environment. What cubby::gtest_main's main() calls before RUN_ALL_TESTS().
void init(int* argc, char** argv);

}  // namespace cubby::testing
