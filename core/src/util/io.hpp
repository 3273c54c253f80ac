// Internal file helpers shared by the tiers, the key scanner and the CLI.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "cubby/error.hpp"

namespace cubby::io {

// The largest file read_file reads unless told otherwise (1 GiB): a bound on what one read may
// allocate, far above any entry or counters file cubby writes.
inline constexpr std::uint64_t kMaxReadBytes = 1ull << 30;

// The whole regular file at `path`, at most `max_bytes` long. The file is opened with
// O_NOFOLLOW | O_NONBLOCK and checked with fstat before anything is read, so a link at `path`
// (to /dev/zero, to another file), a FIFO, a device, a socket or a folder is refused at once
// (never followed, never a hang, never an unbounded read): Errc::corrupt naming what it is, as
// is a file longer than `max_bytes`. Errc::not_found if nothing is at `path`; Errc::io (with
// strerror) if it cannot be opened or read.
// With `opened`, the fstat of the file read is stored there (who owns it, its mode: what
// file_trust.hpp judges), so a file swapped in after a check is never the one judged.
Result<std::string> read_file(const std::filesystem::path& path,
                              std::uint64_t max_bytes = kMaxReadBytes,
                              struct stat* opened = nullptr);

// The whole file, like read_file; and if the file's mtime is older than `refresh_after`, sets its
// mtime to now (futimens on the open file: one extra syscall at most once per interval). The
// store's recency record: atime is useless on relatime/noatime mounts. A file that cannot be
// touched (not its owner, no write permission) is still read.
Result<std::string> read_file_refresh(const std::filesystem::path& path,
                                      std::chrono::seconds refresh_after,
                                      std::uint64_t max_bytes = kMaxReadBytes,
                                      struct stat* opened = nullptr);

// "a FIFO", "a symbolic link", "a folder", ... for an st_mode (what read_file refuses).
std::string file_type_name(unsigned mode);

// Writes all of `bytes` to `fd` (a pipe, a socket, a file), retrying short writes and EINTR:
// 0, or the errno of the write that failed (EIO for a write that wrote nothing). The one write
// loop of the library and its tools.
int write_all(int fd, std::string_view bytes);

// How a new file's permission bits are set.
enum class FileMode : std::uint8_t {
  group_shared,  // 0664 whatever the umask (the store: a group shares it)
  umask,         // 0666 less the umask, like any new file (files the user asked for: exports)
  // 0644 whatever the umask: the group reads, only the owner writes (files whose writer must be
  // known: cubby.conf, the scan record; see file_trust.hpp)
  owner_writable,
};

// Creates `path` exclusively for writing (O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC) with `mode`'s
// bits: the fd, or -1 with errno set. Anything already at `path` fails with EEXIST, a link
// (dangling or not) included, so nothing is ever followed, opened or truncated.
int open_new_file(const std::filesystem::path& path, FileMode mode);

// A file that replaces `path` only once it is complete. Its bytes go to a new temp file beside
// `path`, named temp_path_for(path) (an unpredictable name) and created with
// O_CREAT | O_EXCL | O_NOFOLLOW: an existing file or a link planted at that name is never opened,
// followed or truncated (another name is drawn). commit() renames it over `path` (rename(2)
// replaces a link at `path` itself, never its target): readers see the old file, or all of the
// new one. Not committed (failure, destruction): the temp file is removed. The writer holds a
// flock on its temp file until it is renamed, so `gc` can tell a temp file whose writer died
// (unlocked) from one being written. No fsync.
class AtomicFile {
 public:
  // Creates the temp file; with `make_folder`, `path`'s folder too (mode 02775) if missing.
  // Errc::io with advice if it cannot.
  static Result<AtomicFile> create(const std::filesystem::path& path, FileMode mode,
                                   bool make_folder);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  // Appends `bytes` to the temp file. Errc::io naming `path` with advice (a full disk ...).
  Result<void> write(std::string_view bytes);
  // Publishes the temp file at `path`. After a failure the temp file is gone and `path` untouched.
  Result<void> commit();

  const std::filesystem::path& temp_path() const { return temp_; }

 private:
  AtomicFile(std::filesystem::path path, std::filesystem::path temp, int fd)
      : path_(std::move(path)), temp_(std::move(temp)), fd_(fd) {}
  void abandon();

  std::filesystem::path path_;
  std::filesystem::path temp_;
  int fd_ = -1;
};

// AtomicFile::create(path, mode, true) + write + commit: `path` (and its missing folders, mode
// 02775) get `bytes`, with `mode`'s bits (group_shared: 0664 whatever the umask).
Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view bytes,
                               FileMode mode = FileMode::group_shared);

// Appends `bytes` to `path` with one O_APPEND write (created mode 0664, folders 02775): appends
// of concurrent processes never interleave within one call on a local file system. A link at
// `path` is not followed (Errc::io).
Result<void> append_file(const std::filesystem::path& path, std::string_view bytes);

// Creates `folder` and its missing parents with mode 02775 whatever the umask; existing folders
// are left as they are.
Result<void> make_folders(const std::filesystem::path& folder);

// For tests (fault injection): while non-zero, every AtomicFile::write fails with this errno
// (ENOSPC, EROFS, EACCES, ...) after creating its temp file, as a full disk would.
void inject_write_failure(int error);

// A unique, unpredictable temp-file name for `path`: "<path>.tmp.<pid>.<16 hex from getrandom>".
std::filesystem::path temp_path_for(const std::filesystem::path& path);

// True if `name` is a file name temp_path_for gives a file named `stem`:
// "<stem>.tmp.<decimal pid>.<16 lowercase hex>". What `gc` may treat as cubby's own leftover.
bool is_temp_name_of(std::string_view stem, std::string_view name);

// Calls `visit(folder_fd, name)` for each name (but "." and "..") in `folder`; `name` is
// NUL-terminated. The folder is opened with O_NOFOLLOW: a link at its last component is not
// followed. `folder_fd` is the open folder, for *at calls (openat, fstatat, unlinkat with
// AT_SYMLINK_NOFOLLOW / O_NOFOLLOW) that a renamed or linked parent cannot redirect. With
// `parent_fd` an open folder (not AT_FDCWD), `folder`'s last component is opened in it and the
// whole of `folder` only names it in messages. A missing folder, a link or something that is
// not a folder visits nothing. Errc::io if it cannot be read.
Result<void> for_each_name(const std::filesystem::path& folder,
                           const std::function<void(int folder_fd, std::string_view name)>& visit,
                           int parent_fd = AT_FDCWD);

}  // namespace cubby::io
