// Generic operations over the counter table; contract in cubby/stats.hpp.
#include "cubby/stats.hpp"

namespace cubby {

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
