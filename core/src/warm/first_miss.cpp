// Waiting for a run's first miss; contract in warm/first_miss.hpp.
#include "warm/first_miss.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <string>
#include <unordered_set>
#include <vector>

#include "key/scan_record.hpp"
#include "storage/local/manifests.hpp"
#include "store/store.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

constexpr int kLookAgainMs = 250;

// Whether `path` was touched at or after `since_ns` (less the clock slack).
bool touched_since(const std::filesystem::path& path, std::int64_t since_ns) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  return FileScan::mtime_of(st) >= since_ns - kMissClockSlack;
}

}  // namespace

bool recorded_entries_missing(const std::filesystem::path& root, std::string_view suite) {
  const std::vector<RecipeKey> keys = load_suite_keys(root, suite);
  const Store store(root);
  return keys.empty() || std::any_of(keys.begin(), keys.end(), [&store](const RecipeKey& pair) {
           return !store.contains(pair.key);
         });
}

bool headers_written_since_last_run(const std::filesystem::path& root, std::string_view suite,
                                    const std::vector<Recipe>& recipes,
                                    const std::filesystem::path& base_dir) {
  struct stat keys {};
  if (::stat(suite_keys_path(root, suite).c_str(), &keys) != 0) return false;
  const std::int64_t keys_written = FileScan::mtime_of(keys);
  std::unordered_set<const void*> lists;
  std::unordered_set<std::string> paths;
  for (const Recipe& recipe : recipes) {
    if (!lists.insert(recipe.header_paths.identity()).second) continue;
    for (std::string& path : header_paths_of(recipe, base_dir)) {
      const auto [seen, added] = paths.insert(std::move(path));
      struct stat st {};
      if (added && ::stat(seen->c_str(), &st) == 0 && FileScan::mtime_of(st) > keys_written)
        return true;
    }
  }
  return false;
}

void note_headers_unchanged(const std::filesystem::path& root, std::string_view suite,
                            std::int64_t checked_ns) {
  const std::filesystem::path path = suite_keys_path(root, suite);
  struct stat keys {};
  if (::stat(path.c_str(), &keys) != 0 || FileScan::mtime_of(keys) >= checked_ns) return;
  const std::array<struct timespec, 2> times{
      timespec{.tv_sec = 0, .tv_nsec = UTIME_OMIT},
      timespec{.tv_sec = checked_ns / 1'000'000'000, .tv_nsec = checked_ns % 1'000'000'000}};
  (void)::utimensat(AT_FDCWD, path.c_str(), times.data(), AT_SYMLINK_NOFOLLOW);
}

bool wait_for_first_miss(const std::filesystem::path& root, std::string_view suite,
                         std::int64_t since_ns, const std::function<bool()>& stop) {
  const std::filesystem::path path = suite_miss_path(root, suite);
  static_cast<void>(io::make_folders(path.parent_path()));  // else inotify fails: looks only
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
