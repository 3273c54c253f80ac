// What one Cache counts itself (hits by tier, misses, compiles and their times; the tiers count
// the rest, see Cache::stats), and how much of its totals it has reported to CUBBY_STATS_FILE.
// Thread-safe.
#pragma once

#include <functional>
#include <mutex>

#include "cubby/stats.hpp"

namespace cubby {

class CacheCounters {
 public:
  // Applies `change` to the counts, under their lock.
  void update(const std::function<void(Stats&)>& change);
  // The counts so far.
  Stats snapshot() const;
  // Reports to CUBBY_STATS_FILE (report_stats_to_file) the growth of `totals()` since the last
  // report: the file's lines are summed, so each report holds only what is new. One report at a
  // time; `totals` is read under that lock.
  void report(const std::function<Stats()>& totals);

 private:
  mutable std::mutex mutex_;
  Stats counted_;
  std::mutex report_mutex_;
  Stats reported_;
};

}  // namespace cubby
