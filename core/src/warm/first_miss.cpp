// Waiting for a run's first miss; contract in warm/first_miss.hpp.
#include "warm/first_miss.hpp"

#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <system_error>
#include <vector>

#include "storage/local/manifests.hpp"
#include "store/store.hpp"

namespace cubby {
namespace {

constexpr int kLookAgainMs = 250;

// Whether `path` was touched at or after `since_ns` (less the clock slack).
bool touched_since(const std::filesystem::path& path, std::int64_t since_ns) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  const std::int64_t touched =
      static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return touched >= since_ns - kMissClockSlack;
}

}  // namespace

bool recorded_entries_missing(const std::filesystem::path& root, std::string_view suite) {
  const std::vector<RecipeKey> keys = load_suite_keys(root, suite);
  const Store store(root);
  return keys.empty() || std::any_of(keys.begin(), keys.end(), [&store](const RecipeKey& pair) {
           return !store.contains(pair.key);
         });
}

std::int64_t wall_clock_ns() {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

bool wait_for_first_miss(const std::filesystem::path& root, std::string_view suite,
                         std::int64_t since_ns, const std::function<bool()>& stop) {
  const std::filesystem::path path = suite_miss_path(root, suite);
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  // Watched before the first look, so that a touch between the two is not lost.
  int watch = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (watch >= 0 && ::inotify_add_watch(watch, path.parent_path().c_str(),
                                        IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO) < 0) {
    ::close(watch);
    watch = -1;  // no watch (a file system without inotify): looks every 250 ms only
  }
  bool missed = false;
  while (!(missed = touched_since(path, since_ns)) && !stop()) {
    if (watch < 0) {
      ::usleep(kLookAgainMs * 1000);
      continue;
    }
    struct pollfd ready {
      watch, POLLIN, 0
    };
    if (::poll(&ready, 1, kLookAgainMs) > 0) {
      std::array<char, 4096> events{};  // what changed is looked at above, not read from here
      while (::read(watch, events.data(), events.size()) > 0) {
      }
    }
  }
  if (watch >= 0) ::close(watch);
  return missed;
}

}  // namespace cubby
