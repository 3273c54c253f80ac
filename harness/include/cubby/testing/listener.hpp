// The per-test reporting listener: for every test, the shared cache's activity during it is
// recorded as test properties (RecordProperty), so it appears in --gtest_output=xml/json:
//   cubby_hits (all tiers), and cubby_<name> for every counter of Stats (cubby/stats.hpp:
//   cubby_hits_memory, cubby_hits_disk, cubby_misses, cubby_compiles, cubby_compile_ms, ...;
//   times in ms),
//   cubby_lookups, cubby_lookup_ms, cubby_miss_ms  (LookupTime in session.hpp: the calls of
//   cubby::testing::compile served from the store, their summed wall time, and that of the
//   calls that compiled)
// and the same per test suite (compiles in SetUpTestSuite included) on the <testsuite> element.
// With require_warm, a test during which the cache compiled fails (if `compile()` has not
// already failed it with the key's fields, or with the reason it compiled without the store);
// the failure names the reasons of the programs it compiled without the store.
#pragma once

#include <gtest/gtest.h>

#include "cubby/cache.hpp"
#include "cubby/testing/session.hpp"

namespace cubby::testing {

class Listener : public ::testing::EmptyTestEventListener {
 public:
  void OnTestSuiteStart(const ::testing::TestSuite& suite) override;
  void OnTestSuiteEnd(const ::testing::TestSuite& suite) override;
  void OnTestStart(const ::testing::TestInfo& test) override;
  void OnTestEnd(const ::testing::TestInfo& test) override;

 private:
  Stats suite_start_{};
  Stats test_start_{};
  LookupTime suite_time_start_{};
  LookupTime test_time_start_{};
};

// Appends one Listener to GoogleTest's listeners unless one is there already. Must be called
// before RUN_ALL_TESTS() (Environment's constructor does).
void install_listener();

// Records `stats` and `time` as the cubby_* properties of whatever GoogleTest is running (a test,
// a test suite, or the whole run).
void record_properties(const Stats& stats, const LookupTime& time);

}  // namespace cubby::testing
