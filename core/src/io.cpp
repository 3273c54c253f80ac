// File helpers: whole-file reads and atomic, group-shareable writes.
#include "io.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

namespace cubby::io {
namespace {

constexpr mode_t kFileMode = 0664;
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
    if (errno != ENOENT) return write_failure("inspect", current, errno);
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

std::uint64_t random_u64() {
  static std::atomic<std::uint64_t> counter{0};
  thread_local std::mt19937_64 engine{[] {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }()};
  // The counter keeps names unique within a process even if two engines were seeded alike.
  return engine() ^ (counter.fetch_add(1, std::memory_order_relaxed) * 0x9e3779b97f4a7c15ull);
}

// Writes all of `bytes` to `fd`, retrying short writes and EINTR. Returns 0 or an errno.
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

}  // namespace

void inject_write_failure(int error) { injected_write_failure.store(error); }

Result<std::string> read_file(const std::filesystem::path& path) {
  return read_file_refresh(path, std::chrono::seconds::max());
}

Result<std::string> read_file_refresh(const std::filesystem::path& path,
                                      std::chrono::seconds refresh_after) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) return fail(Errc::not_found, "no such file: ", path.string());
    return fail(Errc::io, "cannot open ", path.string(), ": ", describe(error), advice_for(error));
  }
  // Reads straight into the result, sized from fstat: entries are read on every disk hit, so no
  // bounce buffer. A file that grows while it is read is still read to its end.
  std::string out;
  struct stat info {};
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) {
    if (info.st_size > 0) out.resize(static_cast<std::size_t>(info.st_size));
    if (refresh_after != std::chrono::seconds::max()) {
      struct timespec now {};
      ::clock_gettime(CLOCK_REALTIME, &now);
      if (now.tv_sec - info.st_mtim.tv_sec > refresh_after.count()) {
        (void)::futimens(fd, nullptr);  // best effort: a read-only store keeps its old recency
      }
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
      out.append(probe, static_cast<std::size_t>(got));
      out.resize(out.size() + (1 << 16));  // the file grew: room for the rest
    }
    used += static_cast<std::size_t>(got);
  }
  out.resize(used);
  ::close(fd);
  return out;
}

Result<void> append_file(const std::filesystem::path& path, std::string_view bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, kFileMode);
  if (fd < 0 && errno == ENOENT && !path.parent_path().empty()) {
    auto made = make_folders(path.parent_path());
    if (!made) return made;
    fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, kFileMode);
  }
  if (fd < 0) return write_failure("open", path, errno);
  struct stat info {};
  // A new file gets the group's bits whatever the umask (an existing one is left as it is).
  if (::fstat(fd, &info) == 0 && info.st_size == 0) (void)::fchmod(fd, kFileMode);
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

Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view bytes) {
  const std::filesystem::path folder = path.parent_path();
  if (!folder.empty()) {
    auto made = make_folders(folder);
    if (!made) return made;
  }

  std::filesystem::path temp;
  int fd = -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    temp = temp_path_for(path);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, kFileMode);
    if (fd < 0 && errno != EEXIST) return write_failure("create", temp, errno);
  }
  if (fd < 0) return write_failure("create", temp, EEXIST);

  // Closes and removes the temp file; `error` is captured by the caller before this runs.
  auto abandon = [&](const char* what, const std::filesystem::path& target, int error) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    return write_failure(what, target, error);
  };
  (void)::flock(fd, LOCK_EX | LOCK_NB);  // marks the temp file live for `gc` (fresh file: free)
  if (::fchmod(fd, kFileMode) != 0) return abandon("chmod", temp, errno);
  if (const int injected = injected_write_failure.load(); injected != 0) {
    return abandon("write", temp, injected);
  }
  if (const int error = write_all(fd, bytes); error != 0) return abandon("write", temp, error);
  // Rename before close, so the flock covers the temp file for its whole life.
  if (::rename(temp.c_str(), path.c_str()) != 0) return abandon("rename over", path, errno);
  if (::close(fd) != 0) {
    // close reports delayed write errors: the published file may be short, so withdraw it.
    const int error = errno;
    fd = -1;
    ::unlink(path.c_str());
    return write_failure("write", path, error);
  }
  return {};
}

}  // namespace cubby::io
