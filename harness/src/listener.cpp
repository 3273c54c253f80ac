#include "cubby/testing/listener.hpp"

#include <cstdio>
#include <string>

#include "cubby/stats_summary.hpp"
#include "cubby/testing/environment.hpp"
#include "cubby/testing/session.hpp"

namespace cubby::testing {
namespace {

std::string milliseconds(double ms, int decimals = 1) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, ms);
  return text;
}

void record(const char* key, std::uint64_t value) {
  ::testing::Test::RecordProperty(key, std::to_string(value));
}

// The shared cache's stats, or nothing if it cannot be opened (the failure is reported by the
// Environment or by the first test that compiles).
std::optional<Stats> stats_now() {
  try {
    return cache().stats();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

void record_properties(const Stats& stats, const LookupTime& time) {
  record("cubby_hits", stats.hits_memory + stats.hits_disk + stats.hits_remote);
  // Every counter of the table (cubby/stats.hpp) as cubby_<name>; times in ms, one decimal.
  for (const StatInfo& stat : kStats) {
    const std::string key = "cubby_" + std::string(stat.name);
    if (stat.count != nullptr) {
      record(key.c_str(), stats.*stat.count);
    } else {
      ::testing::Test::RecordProperty(key, milliseconds(stats.*stat.ms));
    }
  }
  // Microseconds matter here: a memory hit takes a few.
  record("cubby_lookups", time.hits);
  ::testing::Test::RecordProperty("cubby_lookup_ms", milliseconds(time.hit_ms, 3));
  ::testing::Test::RecordProperty("cubby_miss_ms", milliseconds(time.miss_ms, 3));
}

void Listener::OnTestSuiteStart(const ::testing::TestSuite&) {
  suite_start_ = stats_now().value_or(Stats{});
  suite_time_start_ = lookup_time();
}

void Listener::OnTestSuiteEnd(const ::testing::TestSuite&) {
  if (auto now = stats_now()) {
    record_properties(difference(*now, suite_start_), difference(lookup_time(), suite_time_start_));
  }
}

void Listener::OnTestStart(const ::testing::TestInfo&) {
  reset_reported_compiles();
  test_start_ = stats_now().value_or(Stats{});
  test_time_start_ = lookup_time();
}

void Listener::OnTestEnd(const ::testing::TestInfo&) {
  const auto now = stats_now();
  if (!now) return;
  const Stats delta = difference(*now, test_start_);
  record_properties(delta, difference(lookup_time(), test_time_start_));
  // Listeners' OnTestEnd run in reverse order of installation, so this failure is seen by the
  // result printers installed before this listener.
  const std::uint64_t reported = reported_compiles();
  if (current_options().require_warm && delta.compiles > reported) {
    std::string why;  // the programs among them compiled without the store, by reason
    for (const std::string& line : uncached_lines(delta, uncached_details())) why += "; " + line;
    ADD_FAILURE() << "cubby: this test compiled " << (delta.compiles - reported)
                  << " program(s) although --cubby_require_warm / CUBBY_REQUIRE_WARM is set, "
                     "through a path that bypasses cubby::testing::compile (e.g. "
                     "cubby::testing::cache().compile)"
                  << why
                  << ". Compile through KernelTest::compile or "
                     "cubby::testing::compile to see the key's fields; `cubby ls --dir "
                  << cache().config().dir.string() << "` lists what the store holds.";
  }
}

void install_listener() {
  ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
  static bool installed = false;  // GoogleTest owns the listener; one per process
  if (installed) return;
  installed = true;
  listeners.Append(new Listener);
}

}  // namespace cubby::testing
