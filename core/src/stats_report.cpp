#include "stats_report.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace cubby {

std::string json_text(const nlohmann::json& document) {
  return document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json stats_to_json(const Stats& stats) {
  return {
      {"hits_memory", stats.hits_memory}, {"hits_disk", stats.hits_disk},
      {"hits_remote", stats.hits_remote}, {"misses", stats.misses},
      {"compiles", stats.compiles},       {"compile_failures", stats.compile_failures},
      {"corrupt", stats.corrupt},         {"failed_writes", stats.failed_writes},
      {"bytes_read", stats.bytes_read},   {"bytes_written", stats.bytes_written},
      {"compile_ms", stats.compile_ms},   {"compile_ms_saved", stats.compile_ms_saved},
      {"remote_misses", stats.remote_misses},
      {"remote_errors", stats.remote_errors},
      {"remote_timeouts", stats.remote_timeouts},
      {"remote_skipped", stats.remote_skipped},
      {"remote_rejected", stats.remote_rejected},
      {"remote_bytes_read", stats.remote_bytes_read},
      {"remote_bytes_written", stats.remote_bytes_written},
      {"remote_writes", stats.remote_writes},
      {"remote_writes_dropped", stats.remote_writes_dropped},
      {"remote_ms", stats.remote_ms},
  };
}

void report_stats_to_file(const Stats& stats) noexcept {
  const char* path = std::getenv("CUBBY_STATS_FILE");
  if (path == nullptr || *path == '\0') return;
  const bool counted = stats.hits_memory + stats.hits_disk + stats.hits_remote + stats.misses +
                           stats.compiles + stats.compile_failures + stats.corrupt +
                           stats.failed_writes !=
                       0;
  if (!counted) return;
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
