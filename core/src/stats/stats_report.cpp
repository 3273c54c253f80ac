#include "stats/stats_report.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "cubby/error.hpp"

namespace cubby {

std::string json_text(const nlohmann::json& document) {
  return document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json stats_to_json(const Stats& stats) {
  nlohmann::json out = nlohmann::json::object();
  for (const StatInfo& stat : kStats) {
    if (stat.count != nullptr) {
      out[std::string(stat.name)] = stats.*stat.count;
    } else {
      // Rounded to whole microseconds: a sum of times prints as 975.434, never 975.43399999999997.
      out[std::string(stat.name)] = std::round(stats.*stat.ms * 1000.0) / 1000.0;
    }
  }
  return out;
}

Stats stats_from_json(const nlohmann::json& document) {
  if (!document.is_object()) {
    throw Error(Errc::invalid_argument,
                "the counters are not a JSON object; pass one as cubby_stats_json writes it");
  }
  Stats stats;
  for (const StatInfo& stat : kStats) {
    const auto found = document.find(std::string(stat.name));
    if (found == document.end() || !found->is_number()) continue;
    const double value = found->get<double>();
    if (!(value > 0)) continue;
    if (stat.ms != nullptr) {
      stats.*stat.ms = value;
    } else {
      stats.*stat.count = found->is_number_unsigned() ? found->get<std::uint64_t>()
                                                      : static_cast<std::uint64_t>(value);
    }
  }
  return stats;
}

nlohmann::json uncached_first_to_json(const Stats& stats, const UncachedDetails& first) {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t i = 0; i < kUncached.size(); ++i) {
    if (stats.*kUncached[i].count != 0 && !first[i].empty()) {
      out[std::string(kUncached[i].name)] = first[i];
    }
  }
  return out;
}

UncachedDetails uncached_first_from_json(const nlohmann::json& document) {
  UncachedDetails first;
  if (!document.is_object()) return first;
  const auto found = document.find(kUncachedFirstMember);
  if (found == document.end() || !found->is_object()) return first;
  for (const auto& [name, detail] : found->items()) {
    const Uncached reason = uncached_by_name(name);
    if (reason != Uncached::none && detail.is_string()) {
      first[static_cast<std::size_t>(reason)] = detail.get<std::string>();
    }
  }
  return first;
}

void report_stats_to_file(const Stats& stats) noexcept {
  const char* path = std::getenv("CUBBY_STATS_FILE");
  if (path == nullptr || *path == '\0') return;
  if (!any_counted(stats)) return;
  try {
    nlohmann::json line = stats_to_json(stats);
    line["pid"] = static_cast<long long>(::getpid());
    line[kUncachedFirstMember] = uncached_first_to_json(stats, uncached_details());
    const std::string text = json_text(line) + "\n";
    const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0664);
    if (fd < 0) return;
    (void)!::write(fd, text.data(), text.size());
    ::close(fd);
  } catch (...) {
    // Out of memory while formatting: the stats are advisory, drop them.
  }
}

}  // namespace cubby
