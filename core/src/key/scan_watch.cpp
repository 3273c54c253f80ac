// Whole header scans memoized per process while inotify reports no change to what they read.
#include "key/scan_watch.hpp"

#include <sys/inotify.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

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

}  // namespace

struct ScanWatch::State {
  struct Watch {
    bool any_name = false;        // a folder the scan asked about: every entry counts
    std::set<std::string> names;  // an ancestor: the entries on the way down
  };

  std::mutex mutex;
  bool disabled = false;  // inotify failed in this process
  int fd = -1;
  pid_t pid = 0;
  std::unordered_map<int, Watch> watches;
  std::unordered_map<std::string, int> folder_watches;  // path -> wd
  std::set<std::string> file_watches;
  struct Scan {
    HeaderScan result;
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
    return at->second.any_name || at->second.names.count(std::string(name)) != 0;
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

  // Watches `path` as a folder: every entry when `name` is empty, else that entry. False when it
  // cannot be (then nothing may be memoized; out of watches: nothing ever again).
  bool watch_folder(const std::string& path, const std::string& name) {
    auto [at, inserted] = folder_watches.try_emplace(path, -1);
    if (inserted) {
      struct statfs fs {};
      if (::statfs(path.c_str(), &fs) != 0 ||
          !ScanWatch::local_file_system(static_cast<std::int64_t>(fs.f_type))) {
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
    if (name.empty()) {
      watch.any_name = true;
    } else {
      watch.names.insert(name);
    }
    return true;
  }

  // Watches `folder` (every entry) and each folder above it up to "/" (the entry on the way).
  // The scan's folders are absolute; a relative one stops at ".".
  bool watch_folder_and_above(const std::string& folder) {
    if (!watch_folder(folder, "")) return false;
    for (std::string below = folder; below != "/" && below != ".";) {
      const std::string above = parent_of(below);
      if (!watch_folder(above, below.substr(below.rfind('/') + 1))) return false;
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

std::optional<HeaderScan> ScanWatch::find(const std::string& memo_key,
                                          const std::vector<std::string>& calls) {
  State& s = *state_;
  const std::lock_guard lock(s.mutex);
  if (s.disabled || s.fd < 0 || s.pid != ::getpid() || s.scans.empty() || turned_off()) {
    return std::nullopt;
  }
  if (!s.unchanged()) return std::nullopt;
  const auto at = s.scans.find(memo_key);
  if (at == s.scans.end() || calls_of(calls, at->second.macros) != at->second.calls) {
    return std::nullopt;
  }
  s.served.fetch_add(1, std::memory_order_relaxed);
  return at->second.result;
}

void ScanWatch::remember(const std::string& memo_key, const HeaderScan& scan,
                         const std::set<std::string, std::less<>>& macros,
                         const std::vector<std::string>& calls, const Looked& looked,
                         std::int64_t scan_start_ns, std::int64_t too_new_ns) {
  State& s = *state_;
  const std::lock_guard lock(s.mutex);
  if (!s.ready()) return;
  if (!s.unchanged() && !s.ready()) return;  // older memos forgotten: a fresh queue
  const std::int64_t limit = scan_start_ns - too_new_ns;
  // Watches first, then the re-check: a change before a watch shows in the re-check, one after
  // it as an event.
  for (const Folder& folder : looked.folders) {
    std::string watched = folder.path;
    struct stat st {};
    while (watched != "/" && watched != "." &&
           !(::stat(watched.c_str(), &st) == 0 && S_ISDIR(st.st_mode))) {
      watched = parent_of(watched);
    }
    if (!s.watch_folder_and_above(watched)) return;
  }
  for (const File& file : looked.files) {
    if (!s.watch_file(file.path)) return;
  }
  for (const Folder& folder : looked.folders) {
    struct stat st {};
    const bool is_dir = ::stat(folder.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    if (is_dir != folder.is_dir) return;
    if (is_dir && (!FileScan::same_state(st, folder.st) || !FileScan::changed_before(st, limit)))
      return;
  }
  for (const File& file : looked.files) {
    struct stat st {};
    if (::stat(file.path.c_str(), &st) != 0 || !FileScan::same_state(st, file.st) ||
        !FileScan::changed_before(st, limit)) {
      return;
    }
  }
  if (!s.unchanged()) return;
  if (s.scans.size() >= kMaxScans) s.scans.clear();
  s.scans.insert_or_assign(memo_key, State::Scan{scan, macros, calls_of(calls, macros)});
}

void ScanWatch::forget() {
  State& s = *state_;
  const std::lock_guard lock(s.mutex);
  s.reset();
}

std::uint64_t ScanWatch::served() const { return state_->served.load(std::memory_order_relaxed); }

bool ScanWatch::local_file_system(std::int64_t f_type) {
  switch (static_cast<std::uint32_t>(f_type)) {
    case 0xEF53u:      // ext2, ext3, ext4
    case 0x58465342u:  // XFS
    case 0x9123683Eu:  // Btrfs
    case 0x01021994u:  // tmpfs
    case 0x794C7630u:  // overlayfs
    case 0xF2F52010u:  // F2FS
    case 0x2FC12FC1u:  // ZFS
    case 0x73717368u:  // SquashFS (read-only)
    case 0x858458F6u:  // ramfs
      return true;
    default:
      return false;  // NFS, CIFS/SMB, FUSE, 9p, Ceph, Lustre ...: changes elsewhere go unseen
  }
}

}  // namespace cubby
