#include "cubby/stats_summary.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace cubby {
namespace {

// `value` formatted by printf's `format` (one double).
std::string printed(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// "label 3" items, joined by ", ", of the counts that are not 0.
std::string nonzero(std::initializer_list<std::pair<std::uint64_t, const char*>> items) {
  std::string text;
  for (const auto& [count, label] : items) {
    if (count == 0) continue;
    if (!text.empty()) text += ", ";
    text += std::string(label) + " " + std::to_string(count);
  }
  return text;
}

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

std::vector<std::string> uncached_lines(const Stats& stats, const UncachedDetails& first) {
  std::vector<std::string> lines;
  std::uint64_t uncached = 0;
  for (const UncachedInfo& reason : kUncached) uncached += stats.*reason.count;
  // Counters persisted before `programs` existed may lack it: never "3 of 0".
  const std::uint64_t programs = std::max(stats.programs, uncached);
  for (std::size_t i = 0; i < kUncached.size(); ++i) {
    const std::uint64_t count = stats.*kUncached[i].count;
    if (count == 0) continue;
    std::string line = std::to_string(count) + " of " + std::to_string(programs) +
                       " programs compiled without the store: " + std::string(kUncached[i].label);
    if (!first[i].empty()) line += ", first " + first[i];
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<std::string> summary_lines(const Stats& stats, const UncachedDetails& first) {
  std::vector<std::string> lines;
  const std::uint64_t hits = stats.hits_memory + stats.hits_disk + stats.hits_remote;
  lines.push_back("hits: " + std::to_string(hits) + " (memory " +
                  std::to_string(stats.hits_memory) + ", disk " + std::to_string(stats.hits_disk) +
                  ", remote " + std::to_string(stats.hits_remote) + "), misses: " +
                  std::to_string(stats.misses) + ", compiles: " + std::to_string(stats.compiles) +
                  " (" + printed("%.2f", stats.compile_ms / 1000.0) + " s), compile time saved: " +
                  printed("%.2f", stats.compile_ms_saved / 1000.0) + " s");
  for (const std::string& line : uncached_lines(stats, first)) lines.push_back(line);
  if (stats.waited_for_others != 0) {
    lines.push_back("duplicate compiles avoided: " + std::to_string(stats.waited_for_others) +
                    " (lookups that waited for another process compiling the same kernel and got "
                    "its result)");
  }
  const std::string problems = nonzero({{stats.corrupt, "corrupt"},
                                        {stats.failed_writes, "failed writes"},
                                        {stats.compile_failures, "compile failures"}});
  if (!problems.empty()) lines.push_back("problems: " + problems);
  const std::uint64_t remote_lookups = stats.hits_remote + stats.remote_misses;
  if (remote_lookups != 0 || stats.remote_writes != 0) {
    const std::string why = nonzero({{stats.remote_errors, "errors"},
                                     {stats.remote_timeouts, "timeouts"},
                                     {stats.remote_skipped, "skipped"},
                                     {stats.remote_rejected, "rejected"},
                                     {stats.remote_writes_dropped, "writes dropped"}});
    const double per_lookup =
        stats.remote_ms / static_cast<double>(remote_lookups != 0 ? remote_lookups : 1);
    lines.push_back(
        "remote: " + std::to_string(stats.hits_remote) + "/" + std::to_string(remote_lookups) +
        " hits, " + printed("%.2f", per_lookup) + " ms per lookup, " +
        std::to_string(stats.remote_writes) + " writes, " +
        printed("%.1f", static_cast<double>(stats.remote_bytes_read) / kMiB) + " MiB in, " +
        printed("%.1f", static_cast<double>(stats.remote_bytes_written) / kMiB) + " MiB out" +
        (stats.remote_read_ahead == 0
             ? ""
             : ", " + std::to_string(stats.remote_read_ahead) + " read ahead (" +
                   std::to_string(stats.remote_read_ahead_taken) + " taken)") +
        (why.empty() ? "" : " (" + why + ")"));
  }
  return lines;
}

}  // namespace cubby
