#include "cubby/testing/environment.hpp"

#include <cstdio>
#include <iostream>
#include <string>

#include "cubby/testing/kernel_test.hpp"
#include "cubby/testing/listener.hpp"
#include "cubby/testing/session.hpp"

namespace cubby::testing {
namespace {

std::string seconds(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", ms / 1000.0);
  return text;
}

std::string plural(std::uint64_t count, const char* word) {
  return std::to_string(count) + " " + word + (count == 1 ? "" : "s");
}

}  // namespace

std::string summary_line(const Stats& stats, const LookupTime& time, const std::string& store) {
  const std::uint64_t hits = stats.hits_memory + stats.hits_disk + stats.hits_remote;
  std::string line = "[cubby] " + plural(hits, "hit") + " (memory " +
                     std::to_string(stats.hits_memory) + ", disk " +
                     std::to_string(stats.hits_disk);
  if (stats.hits_remote != 0) line += ", remote " + std::to_string(stats.hits_remote);
  line += ")";
  if (time.hits != 0) {
    char lookups[32];
    std::snprintf(lookups, sizeof lookups, " in %.1f ms", time.hit_ms);
    line += lookups;
  }
  line += ", " + plural(stats.compiles, "compile");
  if (stats.compiles != 0) line += " (" + seconds(stats.compile_ms) + ")";
  line += ", " + seconds(stats.compile_ms_saved) + " of compiling saved";
  if (stats.corrupt != 0)
    line += ", " + std::to_string(stats.corrupt) + " corrupt entries repaired";
  if (stats.failed_writes != 0) {
    line += ", " + std::to_string(stats.failed_writes) + " failed writes";
  }
  // The remote tier, when it was asked: lookups, why they missed, what was shared.
  const std::uint64_t remote_lookups = stats.hits_remote + stats.remote_misses;
  if (remote_lookups != 0 || stats.remote_writes != 0) {
    char latency[32];
    std::snprintf(
        latency, sizeof latency, "%.2f ms",
        remote_lookups != 0 ? stats.remote_ms / static_cast<double>(remote_lookups) : 0.0);
    line += "; remote: " + std::to_string(stats.hits_remote) + "/" +
            std::to_string(remote_lookups) + " hits, " + latency + " per lookup, " +
            plural(stats.remote_writes, "write");
    for (const auto& [count, what] :
         {std::pair{stats.remote_errors, "errors"}, std::pair{stats.remote_timeouts, "timeouts"},
          std::pair{stats.remote_skipped, "skipped"}, std::pair{stats.remote_rejected, "rejected"},
          std::pair{stats.remote_writes_dropped, "writes dropped"}}) {
      if (count != 0) line += ", " + std::to_string(count) + " " + what;
    }
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
