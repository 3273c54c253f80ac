// File helpers: whole-file reads and atomic, group-shareable writes.
#include "util/io.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <utility>
#include <vector>

#include "util/bytes.hpp"

namespace cubby::io {
namespace {

constexpr mode_t kFileMode = 0664;
constexpr mode_t kOwnerWritableMode = 0644;
constexpr mode_t kFolderMode = 02775;

std::string describe(int error) { return std::strerror(error); }

// What to do about a failed write, by errno.
std::string advice_for(int error) {
  switch (error) {
    case ENOSPC:
    case EDQUOT:
      return " (the disk or quota is full: free space, lower CUBBY_MAX_SIZE or run `cubby gc`)";
    case EROFS:
      return " (the file system is read-only: set CUBBY_READ_ONLY=1 to use the store without "
             "writing, or point CUBBY_DIR at a writable folder)";
    case EACCES:
    case EPERM:
      return " (fix the folder's permissions: the store's group needs write access, mode 02775; "
             "or set CUBBY_READ_ONLY=1, or point CUBBY_DIR at a folder you can write)";
    default:
      return "";
  }
}

Failure write_failure(const char* what, const std::filesystem::path& path, int error) {
  return fail(Errc::io, "cannot ", what, " ", path.string(), ": ", describe(error),
              advice_for(error));
}

std::atomic<int> injected_write_failure{0};

}  // namespace

// chmod after mkdir, so the umask cannot take the group's bits away.
Result<void> make_folders(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> missing;
  for (std::filesystem::path current = folder; !current.empty();) {
    struct stat info {};
    if (::stat(current.c_str(), &info) == 0) {
      if (!S_ISDIR(info.st_mode)) {
        return fail(Errc::io, "cannot create folder ", folder.string(), ": ", current.string(),
                    " exists and is not a folder; remove it or choose another CUBBY_DIR");
      }
      break;
    }
    // ENOTDIR: a parent is not a folder; the walk up finds and names it.
    if (errno != ENOENT && errno != ENOTDIR) return write_failure("inspect", current, errno);
    missing.push_back(current);
    std::filesystem::path parent = current.parent_path();
    if (parent == current) break;
    current = std::move(parent);
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), kFolderMode) != 0) {
      if (errno == EEXIST) continue;  // made by a concurrent writer
      return write_failure("create folder", *it, errno);
    }
    if (::chmod(it->c_str(), kFolderMode) != 0) return write_failure("chmod folder", *it, errno);
  }
  return {};
}

namespace {

// 64 unpredictable bits (getrandom: the kernel's CSPRNG), so a temp-file name cannot be guessed
// ahead of its creation. Falls back to a seeded engine only if getrandom is unavailable.
std::uint64_t random_u64() {
  std::uint64_t value = 0;
  if (::getrandom(&value, sizeof value, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof value)) {
    return value;
  }
  static std::atomic<std::uint64_t> counter{0};
  thread_local std::mt19937_64 engine{[] {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }()};
  return engine() ^ (counter.fetch_add(1, std::memory_order_relaxed) * 0x9e3779b97f4a7c15ull);
}

}  // namespace

void inject_write_failure(int error) { injected_write_failure.store(error); }

int write_all(int fd, std::string_view bytes) {
  const char* data = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (written == 0) return EIO;
    data += written;
    left -= static_cast<std::size_t>(written);
  }
  return 0;
}

std::string file_type_name(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a folder";
    case S_IFLNK:
      return "a symbolic link";
    case S_IFIFO:
      return "a FIFO";
    case S_IFSOCK:
      return "a socket";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    default:
      return "not a regular file";
  }
}

Result<std::string> read_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                              struct stat* opened) {
  return read_file_refresh(path, std::chrono::seconds::max(), max_bytes, opened);
}

Result<std::string> read_file_refresh(const std::filesystem::path& path,
                                      std::chrono::seconds refresh_after, std::uint64_t max_bytes,
                                      struct stat* opened) {
  // O_NONBLOCK: opening a FIFO does not wait for a writer (and a regular file ignores the flag).
  // O_NOFOLLOW: a link fails with ELOOP, reported below as what it is.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) return fail(Errc::not_found, "no such file: ", path.string());
    struct stat link {};
    if (error == ELOOP && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      return fail(Errc::corrupt, path.string(),
                  " is a symbolic link, not a regular file: it is not followed (remove it)");
    }
    return fail(Errc::io, "cannot open ", path.string(), ": ", describe(error), advice_for(error));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    return fail(Errc::io, "cannot inspect ", path.string(), ": ", describe(error));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return fail(Errc::corrupt, path.string(), " is ", file_type_name(info.st_mode),
                ", not a regular file: it is not read (remove it)");
  }
  const auto too_big = [&] {
    ::close(fd);
    return fail(Errc::corrupt, path.string(), " is over ", std::to_string(max_bytes),
                " bytes, the most that is read: it is not read (remove it)");
  };
  if (static_cast<std::uint64_t>(info.st_size) > max_bytes) return too_big();
  // Reads straight into the result, sized from fstat: entries are read on every disk hit, so no
  // bounce buffer. A file that grows while it is read is still read to its end, up to the bound.
  std::string out;
  if (info.st_size > 0) out.resize(static_cast<std::size_t>(info.st_size));
  if (refresh_after != std::chrono::seconds::max()) {
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    if (now.tv_sec - info.st_mtim.tv_sec > refresh_after.count()) {
      (void)::futimens(fd, nullptr);  // best effort: a read-only store keeps its old recency
    }
  }
  std::size_t used = 0;
  char probe[4096];  // when the result is full: finds the end without growing it
  for (;;) {
    const bool full = used == out.size();
    const ssize_t got =
        full ? ::read(fd, probe, sizeof probe) : ::read(fd, out.data() + used, out.size() - used);
    if (got < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      return fail(Errc::io, "cannot read ", path.string(), ": ", describe(error));
    }
    if (got == 0) break;
    if (full) {
      if (used + static_cast<std::uint64_t>(got) > max_bytes) return too_big();
      out.append(probe, static_cast<std::size_t>(got));
      out.resize(out.size() + (1 << 16));  // the file grew: room for the rest
    }
    used += static_cast<std::size_t>(got);
  }
  out.resize(used);
  ::close(fd);
  if (opened != nullptr) *opened = info;
  return out;
}

Result<void> append_file(const std::filesystem::path& path, std::string_view bytes) {
  constexpr int kFlags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  int fd = ::open(path.c_str(), kFlags, kFileMode);
  if (fd < 0 && errno == ENOENT && !path.parent_path().empty()) {
    auto made = make_folders(path.parent_path());
    if (!made) return made;
    fd = ::open(path.c_str(), kFlags, kFileMode);
  }
  if (fd < 0) return write_failure("open", path, errno);
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return fail(Errc::io, "cannot append to ", path.string(),
                ": it is not a regular file (remove it)");
  }
  // A new file gets the group's bits whatever the umask (an existing one is left as it is).
  if (info.st_size == 0) (void)::fchmod(fd, kFileMode);
  const int error = write_all(fd, bytes);
  ::close(fd);
  if (error != 0) return write_failure("append to", path, error);
  return {};
}

std::filesystem::path temp_path_for(const std::filesystem::path& path) {
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".tmp.%ld.%016llx", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(random_u64()));
  std::filesystem::path out = path;
  out += suffix;
  return out;
}

bool is_temp_name_of(std::string_view stem, std::string_view name) {
  constexpr std::string_view kMarker = ".tmp.";
  constexpr std::size_t kRandomHex = 16;
  if (!name.starts_with(stem) || name.substr(stem.size(), kMarker.size()) != kMarker) return false;
  const std::string_view rest = name.substr(stem.size() + kMarker.size());  // "<pid>.<hex>"
  const std::size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot > 10) return false;
  const std::string_view pid = rest.substr(0, dot);
  const std::string_view random = rest.substr(dot + 1);
  if (random.size() != kRandomHex) return false;
  for (const char c : pid) {
    if (c < '0' || c > '9') return false;
  }
  return is_lower_hex(random);
}

Result<void> for_each_name(const std::filesystem::path& folder,
                           const std::function<void(int folder_fd, std::string_view name)>& visit,
                           int parent_fd) {
  const std::filesystem::path opened = parent_fd == AT_FDCWD ? folder : folder.filename();
  const int fd =
      ::openat(parent_fd, opened.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR || error == ELOOP) return {};
    return fail(Errc::io, "cannot list ", folder.string(), ": ", describe(error),
                " (check the store folder's permissions or point CUBBY_DIR elsewhere)");
  }
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    const int error = errno;
    ::close(fd);
    return fail(Errc::io, "cannot list ", folder.string(), ": ", describe(error));
  }
  for (;;) {
    errno = 0;
    const dirent* item = ::readdir(dir);
    if (item == nullptr) break;
    const std::string_view name = item->d_name;
    if (name == "." || name == "..") continue;
    visit(::dirfd(dir), name);
  }
  const int error = errno;
  ::closedir(dir);
  if (error != 0) return fail(Errc::io, "cannot list ", folder.string(), ": ", describe(error));
  return {};
}

int open_new_file(const std::filesystem::path& path, FileMode mode) {
  const mode_t bits = mode == FileMode::group_shared     ? kFileMode
                      : mode == FileMode::owner_writable ? kOwnerWritableMode
                                                         : 0666;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, bits);
  if (fd >= 0 && mode != FileMode::umask && ::fchmod(fd, bits) != 0) {
    const int error = errno;
    ::unlink(path.c_str());
    ::close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

Result<AtomicFile> AtomicFile::create(const std::filesystem::path& path, FileMode mode,
                                      bool make_folder) {
  const std::filesystem::path folder = path.parent_path();
  if (make_folder && !folder.empty()) {
    auto made = make_folders(folder);
    if (!made) return made.error();
  }
  std::filesystem::path temp;
  int fd = -1;
  // An existing name (a planted file or link, dangling or not) fails with EEXIST and another
  // unpredictable name is drawn.
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    temp = temp_path_for(path);
    fd = open_new_file(temp, mode);
    if (fd < 0 && errno != EEXIST) return write_failure("create", temp, errno);
  }
  if (fd < 0) return write_failure("create", temp, EEXIST);
  (void)::flock(fd, LOCK_EX | LOCK_NB);  // marks the temp file live for `gc` (fresh file: free)
  return AtomicFile(path, std::move(temp), fd);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      temp_(std::move(other.temp_)),
      fd_(std::exchange(other.fd_, -1)) {}

AtomicFile::~AtomicFile() { abandon(); }

void AtomicFile::abandon() {
  if (fd_ < 0) return;
  ::unlink(temp_.c_str());  // before close: the flock covers the temp file for its whole life
  ::close(fd_);
  fd_ = -1;
}

Result<void> AtomicFile::write(std::string_view bytes) {
  if (fd_ < 0) return fail(Errc::io, "cannot write ", path_.string(), ": the file was abandoned");
  int error = injected_write_failure.load();
  if (error == 0) error = write_all(fd_, bytes);
  if (error != 0) {
    abandon();
    return write_failure("write", temp_, error);
  }
  return {};
}

Result<void> AtomicFile::commit() {
  if (fd_ < 0) return fail(Errc::io, "cannot write ", path_.string(), ": the file was abandoned");
  // Rename before close, so the flock covers the temp file for its whole life.
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    abandon();
    return write_failure("rename over", path_, error);
  }
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    // close reports delayed write errors: the published file may be short, so withdraw it.
    const int error = errno;
    ::unlink(path_.c_str());
    return write_failure("write", path_, error);
  }
  return {};
}

Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view bytes,
                               FileMode mode) {
  auto file = AtomicFile::create(path, mode, true);
  if (!file) return file.error();
  auto written = file->write(bytes);
  if (!written) return written;
  return file->commit();
}

}  // namespace cubby::io
