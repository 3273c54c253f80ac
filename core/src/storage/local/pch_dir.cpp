// Per-process PCH folders in a store; contract in pch_dir.hpp.
#include "storage/local/pch_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "util/bytes.hpp"
#include "util/io.hpp"

namespace fs = std::filesystem;

namespace cubby {
namespace {

constexpr std::string_view kStem = "pch";
constexpr std::string_view kLockSuffix = ".lock";

fs::path tmp_folder(const fs::path& root) { return root / "tmp"; }

fs::path lock_of(const fs::path& folder) { return folder.string() + std::string(kLockSuffix); }

// Every PCH folder this process made, by store: they live until the process exits (a Cache that
// closes keeps its PCH for the next one), and this table's end at exit removes them.
struct Registry {
  std::mutex mutex;
  std::map<fs::path, std::shared_ptr<PchDir>> by_store;
  ~Registry() {
    for (auto& [root, dir] : by_store) {
      if (dir) dir->remove();
    }
  }
};

Registry& registry() {
  static Registry instance;
  return instance;
}

// A sub-folder a Cache makes per set of options and headers: 16 lowercase hex digits.
bool is_fingerprint_folder(int folder, std::string_view name) {
  struct stat st {};
  return name.size() == 16 && is_lower_hex(name) &&
         ::fstatat(folder, std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISDIR(st.st_mode);
}

// Unlinks the *.pch files in `folder` (opened in `parent_fd`) and in its fingerprint
// sub-folders, then each folder that is left empty; the bytes removed.
std::uint64_t remove_folder(const fs::path& folder, int parent_fd = AT_FDCWD, int depth = 0) {
  std::uint64_t bytes = 0;
  (void)io::for_each_name(
      folder,
      [&](int fd, std::string_view name) {
        if (depth == 0 && is_fingerprint_folder(fd, name)) {
          bytes += remove_folder(folder / std::string(name), fd, depth + 1);
          return;
        }
        // What NVRTC writes there: regular files named *.pch.
        const std::string file(name);
        struct stat st {};
        if (name.ends_with(".pch") && ::fstatat(fd, file.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) && ::unlinkat(fd, file.c_str(), 0) == 0) {
          bytes += static_cast<std::uint64_t>(st.st_size);
        }
      },
      parent_fd);
  const std::string name = folder.filename().string();
  ::unlinkat(parent_fd, parent_fd == AT_FDCWD ? folder.c_str() : name.c_str(), AT_REMOVEDIR);
  return bytes;
}

}  // namespace

PchDir::PchDir(fs::path path, FileLock lock)
    : path_(std::move(path)), lock_(std::move(lock)), owner_pid_(static_cast<int>(::getpid())) {}

PchDir::~PchDir() { remove(); }

void PchDir::remove() {
  if (removed_) return;
  removed_ = true;
  if (static_cast<int>(::getpid()) != owner_pid_) {
    // A forked child: the folder and the lock (shared with the parent) are the parent's. The lock
    // is kept, never released (releasing unlinks its file), reachable till exit.
    static auto* kept = new std::vector<FileLock>();  // never destroyed, on purpose
    kept->push_back(std::move(lock_));
    return;
  }
  remove_folder(path_);
  lock_.release();
}

std::shared_ptr<PchDir> PchDir::of_store(const fs::path& root) {
  Registry& table = registry();
  const std::lock_guard guard(table.mutex);
  if (auto found = table.by_store.find(root); found != table.by_store.end()) {
    const std::shared_ptr<PchDir>& dir = found->second;
    if (!dir->removed_ && dir->owner_pid_ == static_cast<int>(::getpid())) return dir;
  }
  const fs::path folder = io::temp_path_for(tmp_folder(root) / kStem);
  if (!io::make_folders(tmp_folder(root))) return nullptr;
  // The lock first: a folder without its lock held would look dead to gc.
  auto lock = FileLock::try_acquire(lock_of(folder));
  if (!lock || !lock->has_value()) return nullptr;
  // Private, and made here (not found): no other user can plant a link inside it.
  if (::mkdir(folder.c_str(), 0700) != 0) return nullptr;  // the lock goes with `lock`
  auto dir = std::shared_ptr<PchDir>(new PchDir(folder, std::move(**lock)));
  table.by_store[root] = dir;
  return dir;
}

fs::path PchDir::fingerprint_folder(std::string_view name, bool& made) const {
  made = false;
  if (name.size() != 16 || !is_lower_hex(name)) return {};
  const int parent = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (parent < 0) return {};
  const std::string file(name);
  made = ::mkdirat(parent, file.c_str(), 0700) == 0;
  struct stat st {};
  // mkdirat never follows a link; lstat tells what is there now.
  const bool ok = ::fstatat(parent, file.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                  S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 0077) == 0;
  ::close(parent);
  if (!ok) made = false;
  return ok ? path_ / file : fs::path();
}

void PchDir::discard(std::string_view name) const {
  if (name.size() != 16 || !is_lower_hex(name)) return;
  const int parent = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (parent < 0) return;
  if (is_fingerprint_folder(parent, name)) remove_folder(path_ / std::string(name), parent, 1);
  ::close(parent);
}

PchCleanup remove_dead_pch_dirs(const fs::path& root) {
  PchCleanup cleanup;
  const fs::path tmp = tmp_folder(root);
  (void)io::for_each_name(tmp, [&](int tmp_fd, std::string_view name) {
    if (name.ends_with(kLockSuffix)) {
      const std::string_view folder = name.substr(0, name.size() - kLockSuffix.size());
      struct stat st {};
      // A lock left by a process killed before it made its folder (or after removing it).
      if (io::is_temp_name_of(kStem, folder) &&
          ::fstatat(tmp_fd, std::string(folder).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        remove_if_unlocked_at(tmp_fd, name);
      }
      return;
    }
    struct stat st {};
    if (!io::is_temp_name_of(kStem, name) ||
        ::fstatat(tmp_fd, std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode)) {
      return;
    }
    auto lock = FileLock::try_acquire(lock_of(tmp / std::string(name)));
    if (!lock || !lock->has_value()) return;  // its process lives (or the lock cannot be made)
    cleanup.bytes += remove_folder(tmp / std::string(name), tmp_fd);
    if (::fstatat(tmp_fd, std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      ++cleanup.folders;
    }
  });
  return cleanup;
}

}  // namespace cubby
