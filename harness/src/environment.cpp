#include "cubby/testing/environment.hpp"

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cubby/stats_summary.hpp"
#include "cubby/testing/kernel_test.hpp"
#include "cubby/testing/listener.hpp"
#include "cubby/testing/session.hpp"

namespace cubby::testing {

std::string summary_line(const Stats& stats, const LookupTime& time, const std::string& store) {
  std::string line = "[cubby] ";
  const std::vector<std::string> parts = summary_lines(stats, uncached_details());
  for (std::size_t i = 0; i < parts.size(); ++i) line += (i == 0 ? "" : "; ") + parts[i];
  if (time.hits != 0) {
    char lookups[48];
    std::snprintf(lookups, sizeof lookups, "; hit lookups: %.1f ms", time.hit_ms);
    line += lookups;
  }
  return line + "; store " + store;
}

Environment::Environment() : Environment(Options::from_env()) {}

Environment::Environment(Options options) : options_(std::move(options)) {
  configure(options_);
  install_listener();
}

void Environment::SetUp() {
  configure(options_);
  start_ = cache().stats();  // opens the store; a malformed CUBBY_* variable fails the run here
  time_start_ = lookup_time();
  const std::string note = start_prefetch();
  if (!note.empty() && !options_.quiet) std::cout << "[cubby] " << note << std::endl;
}

void Environment::TearDown() {
  stop_prefetch();  // what it has not compiled yet, no test of this run needs
  // The session's Cache lives until the process exits and is never destroyed: its back-fills,
  // remote writes and counters are finished here, after the last test.
  cache().finish();
  const Stats totals = difference(cache().stats(), start_);
  const LookupTime time = difference(lookup_time(), time_start_);
  record_properties(totals, time);
  char probe[32];
  std::snprintf(probe, sizeof probe, "%.3f", time.arch_probe_ms);
  ::testing::Test::RecordProperty("cubby_arch_probe_ms", probe);
  ::testing::Test::RecordProperty("cubby_dir", cache().config().dir.string());
  KernelTest::release_modules();
  if (!options_.quiet) {
    std::cout << summary_line(totals, time, cache().config().dir.string()) << std::endl;
  }
}

void init(int* argc, char** argv) {
  ::testing::InitGoogleTest(argc, argv);
  const Options options = parse_flags(argc, argv);
  ::testing::AddGlobalTestEnvironment(new Environment(options));
}

}  // namespace cubby::testing
