// Generic operations over the counter table; contract in cubby/stats.hpp.
#include "cubby/stats.hpp"

#include <mutex>

namespace cubby {
namespace {

// This process's first detail of each reason (note_uncached_detail), under its lock.
struct FirstDetails {
  std::mutex mutex;
  UncachedDetails details;
};

FirstDetails& first_details() {
  static FirstDetails* kept = new FirstDetails;  // never destroyed: used until the process ends
  return *kept;
}

}  // namespace

Uncached uncached_by_name(std::string_view name) {
  for (std::size_t i = 0; i < kUncached.size(); ++i) {
    if (kUncached[i].name == name) return static_cast<Uncached>(i);
  }
  return Uncached::none;
}

void note_uncached_detail(Uncached reason, const std::string& detail) {
  if (reason == Uncached::none || detail.empty()) return;
  FirstDetails& first = first_details();
  std::lock_guard lock(first.mutex);
  std::string& kept = first.details[static_cast<std::size_t>(reason)];
  if (kept.empty()) kept = detail;
}

UncachedDetails uncached_details() {
  FirstDetails& first = first_details();
  std::lock_guard lock(first.mutex);
  return first.details;
}

Stats difference(const Stats& after, const Stats& before) {
  Stats d;
  for (const StatInfo& stat : kStats) {
    if (stat.count != nullptr) d.*stat.count = after.*stat.count - before.*stat.count;
    if (stat.ms != nullptr) d.*stat.ms = after.*stat.ms - before.*stat.ms;
  }
  return d;
}

Stats& operator+=(Stats& total, const Stats& part) {
  for (const StatInfo& stat : kStats) {
    if (stat.count != nullptr) total.*stat.count += part.*stat.count;
    if (stat.ms != nullptr) total.*stat.ms += part.*stat.ms;
  }
  return total;
}

bool any_counted(const Stats& stats) {
  for (const StatInfo& stat : kStats) {
    if (stat.count != nullptr && stats.*stat.count != 0) return true;
    if (stat.ms != nullptr && stats.*stat.ms != 0) return true;
  }
  return false;
}

}  // namespace cubby
