// Whole header scans memoized per process while inotify reports no change to what they read.
#include "key/scan_watch.hpp"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "key/file_system_trust.hpp"
#include "key/folder_listing.hpp"
#include "key/scan_record.hpp"

namespace cubby {
namespace {

// A folder: its entries and itself moved or deleted. No IN_ATTRIB: an event a folder's entries can
// raise makes the kernel flag every cached entry of the folder when the watch is added (0.5 ms a
// folder such as the toolkit's include folder), and a file's own watch reports its attributes.
constexpr std::uint32_t kFolderMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                      IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
constexpr std::uint32_t kFileMask =
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF;
// More memoized scans than this (distinct programs in one process): all are forgotten.
constexpr std::size_t kMaxScans = 4096;

// CUBBY_SCAN_WATCH=0 (read at each memoized scan, so a test or a user can turn it off at run time).
bool turned_off() {
  const char* setting = std::getenv("CUBBY_SCAN_WATCH");
  return setting != nullptr && std::string_view(setting) == "0";
}

bool is_folder(const std::string& path, struct stat& st) {
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

struct ScanWatch::State {
  struct Watch {
    bool every_name = false;                   // a folder the scan relied on being empty
    std::set<std::string, std::less<>> names;  // the entries that count, ASCII case folded
  };

  std::mutex mutex;
  bool disabled = false;  // inotify failed in this process
  int fd = -1;
  pid_t pid = 0;
  std::unordered_map<int, Watch> watches;
  std::unordered_map<std::string, int> folder_watches;  // path -> wd
  std::set<std::string> file_watches;
  struct Scan {
    std::shared_ptr<const HeaderScan> result;
    std::set<std::string, std::less<>> macros;  // the scan's include-test macros
    std::vector<std::string> calls;             // the source's calls of them
  };
  std::unordered_map<std::string, Scan> scans;
  std::atomic<std::uint64_t> served{0};

  void reset() {
    if (fd >= 0) ::close(fd);  // a child closes its copy only: the parent's queue is untouched
    fd = -1;
    watches.clear();
    folder_watches.clear();
    file_watches.clear();
    scans.clear();
  }

  // Whether a notification queue of this process is open (opened on first use, and again in a
  // child after a fork).
  bool ready() {
    if (disabled || turned_off()) return false;
    const pid_t now = ::getpid();
    if (fd >= 0 && pid != now) reset();
    if (fd < 0) {
      fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
      if (fd < 0) {
        disabled = true;  // no inotify here (or out of instances): scan every time
        return false;
      }
      pid = now;
    }
    return true;
  }

  // Whether an event can change a memoized scan (`name`: the entry it is about, "" for the
  // watched folder or file itself).
  bool matters(const inotify_event& event, std::string_view name) const {
    if (event.mask & (IN_Q_OVERFLOW | IN_IGNORED | IN_UNMOUNT)) return true;
    const auto at = watches.find(event.wd);
    if (at == watches.end()) return true;  // a file's watch: every event counts
    if (name.empty()) return true;         // the folder itself
    std::string key;
    return at->second.every_name || !NameSet::fold(name, key) || at->second.names.contains(key);
  }

  // Reads every pending notification; false if any matters (then everything is forgotten).
  bool unchanged() {
    alignas(inotify_event) char buffer[16384];
    bool changed = false;
    for (;;) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN) changed = true;
      if (n <= 0) break;
      for (ssize_t at = 0; at < n;) {
        inotify_event event{};
        std::memcpy(&event, buffer + at, sizeof event);
        const char* name = buffer + at + sizeof event;
        changed = changed || matters(event, std::string_view(name, ::strnlen(name, event.len)));
        at += static_cast<ssize_t>(sizeof event + event.len);
      }
    }
    if (changed) reset();
    return !changed;
  }

  // Watches the entry `name` of the folder `path` (every entry when `every_name`). False when it
  // cannot be (then nothing may be memoized; out of watches: nothing ever again).
  bool watch_folder(const std::string& path, std::string_view name, bool every_name = false) {
    auto [at, inserted] = folder_watches.try_emplace(path, -1);
    if (inserted) {
      struct stat folder {};
      if (::stat(path.c_str(), &folder) != 0 || !device_trusted(path, folder.st_dev)) {
        folder_watches.erase(at);
        return false;
      }
      const int wd = ::inotify_add_watch(fd, path.c_str(), kFolderMask);
      if (wd < 0) {
        folder_watches.erase(at);
        if (errno == ENOSPC || errno == ENOMEM) {
          reset();
          disabled = true;
        }
        return false;
      }
      at->second = wd;
    }
    Watch& watch = watches[at->second];
    watch.every_name = watch.every_name || every_name;
    std::string key;
    NameSet::fold(name, key);  // a non-ASCII name is kept as it is: any non-ASCII event counts
    if (!key.empty()) watch.names.insert(std::move(key));
    return true;
  }

  // Watches what decides whether `path` exists and what it is: from its nearest existing folder
  // up to "/", each folder for the entry on the way down. The scan's paths are absolute; a
  // relative one stops at ".".
  bool watch_existence(const std::string& path) {
    std::string below = path;
    struct stat st {};
    while (below != "/" && below != "." && !is_folder(parent_of(below), st))
      below = parent_of(below);
    while (below != "/" && below != ".") {
      const std::string above = parent_of(below);
      if (!watch_folder(above, std::string_view(below).substr(below.rfind('/') + 1))) return false;
      below = above;
    }
    return true;
  }

  bool watch_file(const std::string& path) {
    if (file_watches.count(path) != 0) return true;
    const int wd = ::inotify_add_watch(fd, path.c_str(), kFileMask);
    if (wd < 0) {
      if (errno == ENOSPC || errno == ENOMEM) {
        reset();
        disabled = true;
      }
      return false;
    }
    file_watches.insert(path);
    return true;
  }
};

ScanWatch::ScanWatch() : state_(std::make_unique<State>()) {}

ScanWatch& ScanWatch::process() {
  static ScanWatch* instance = new ScanWatch();  // never destroyed: usable at exit
  return *instance;
}

std::vector<std::string> ScanWatch::calls_of(const std::vector<std::string>& calls,
                                             const std::set<std::string, std::less<>>& macros) {
  std::vector<std::string> out;
  if (macros.empty()) return out;
  for (const std::string& call : calls) {
    if (macros.contains(std::string_view(call).substr(0, call.find(' ')))) out.push_back(call);
  }
  return out;
}

std::shared_ptr<const HeaderScan> ScanWatch::find(const std::string& memo_key,
                                                  const std::vector<std::string>& calls) {
  State& s = *state_;
  const std::lock_guard lock(s.mutex);
  if (s.disabled || s.fd < 0 || s.pid != ::getpid() || s.scans.empty() || turned_off()) {
    return nullptr;
  }
  if (!s.unchanged()) return nullptr;
  const auto at = s.scans.find(memo_key);
  if (at == s.scans.end() || calls_of(calls, at->second.macros) != at->second.calls) {
    return nullptr;
  }
  s.served.fetch_add(1, std::memory_order_relaxed);
  return at->second.result;
}

bool ScanWatch::still_true(const Looked& looked, std::int64_t limit_ns) {
  for (const Folder& folder : looked.folders) {
    struct stat st {};
    const bool is_dir = is_folder(folder.path, st);
    if (is_dir != folder.is_dir) return false;
    if (!is_dir) continue;
    if (st.st_dev != folder.st.st_dev || st.st_ino != folder.st.st_ino) return false;
    if (folder.asked.empty() && !folder.every_name) continue;
    // A folder in the state it was seen in, older than the limit, holds the names it held.
    if (FileScan::same_state(st, folder.st) && FileScan::changed_before(st, limit_ns)) continue;
    const std::shared_ptr<const NameSet> names = listing_of(folder.path, st);
    if (folder.every_name && (names == nullptr || !names->empty())) return false;
    for (const auto& [name, answer] : folder.asked) {
      if ((names == nullptr || names->may_contain(name)) != answer) return false;
    }
  }
  for (const File& file : looked.files) {
    struct stat st {};
    if (::stat(file.path.c_str(), &st) != 0 || !FileScan::same_state(st, file.st) ||
        !FileScan::changed_before(st, limit_ns)) {
      return false;
    }
  }
  for (const std::string& path : looked.absent) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return false;  // it appeared
  }
  return true;
}

bool ScanWatch::remember(const std::string& memo_key, std::shared_ptr<const HeaderScan> scan,
                         const std::set<std::string, std::less<>>& macros,
                         const std::vector<std::string>& calls, const Looked& looked,
                         std::int64_t limit_ns) {
  State& s = *state_;
  const std::lock_guard lock(s.mutex);
  if (!s.ready()) return false;
  if (!s.unchanged() && !s.ready()) return false;  // older memos forgotten: a fresh queue
  // Watches first, then the second look: a change before a watch shows in the second look, one
  // after it as an event.
  for (const Folder& folder : looked.folders) {
    if (!s.watch_existence(folder.path)) return false;
    if (folder.every_name && folder.is_dir && !s.watch_folder(folder.path, "", true)) return false;
    for (const auto& asked : folder.asked) {
      if (!s.watch_folder(folder.path, asked.first)) return false;
    }
  }
  // A candidate's folder is among the folders (its existence watched above, what it is checked
  // by the second look): the candidate's own name in it is what is left to watch.
  std::unordered_set<std::string_view> dirs;
  for (const Folder& folder : looked.folders) {
    if (folder.is_dir) dirs.insert(folder.path);
  }
  const auto watch_entry = [&s, &dirs](const std::string& path) {
    const std::string folder = parent_of(path);
    return !dirs.contains(folder) ||
           s.watch_folder(folder, std::string_view(path).substr(path.rfind('/') + 1));
  };
  for (const File& file : looked.files) {
    if (!s.watch_file(file.path) || !watch_entry(file.path)) return false;
  }
  for (const std::string& path : looked.absent) {
    if (!watch_entry(path)) return false;
  }
  if (!still_true(looked, limit_ns) || !s.unchanged()) return false;
  if (s.scans.size() >= kMaxScans) s.scans.clear();
  s.scans.insert_or_assign(memo_key, State::Scan{std::move(scan), macros, calls_of(calls, macros)});
  return true;
}

void ScanWatch::forget() {
  State& s = *state_;
  const std::lock_guard lock(s.mutex);
  s.reset();
}

std::uint64_t ScanWatch::served() const { return state_->served.load(std::memory_order_relaxed); }

}  // namespace cubby
