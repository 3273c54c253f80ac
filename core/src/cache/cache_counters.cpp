#include "cache/cache_counters.hpp"

#include "stats/stats_report.hpp"

namespace cubby {

void CacheCounters::update(const std::function<void(Stats&)>& change) {
  std::lock_guard lock(mutex_);
  change(counted_);
}

Stats CacheCounters::snapshot() const {
  std::lock_guard lock(mutex_);
  return counted_;
}

void CacheCounters::report(const std::function<Stats()>& totals) {
  std::lock_guard lock(report_mutex_);
  const Stats now = totals();
  report_stats_to_file(difference(now, reported_));
  reported_ = now;
}

}  // namespace cubby
