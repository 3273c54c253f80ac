#include "stats/stats_report.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>

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

void report_stats_to_file(const Stats& stats) noexcept {
  const char* path = std::getenv("CUBBY_STATS_FILE");
  if (path == nullptr || *path == '\0') return;
  if (!any_counted(stats)) return;
  try {
    nlohmann::json line = stats_to_json(stats);
    line["pid"] = static_cast<long long>(::getpid());
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
