// Internal file helpers shared by the tiers, the key scanner and the CLI.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>

#include "cubby/error.hpp"

namespace cubby::io {

// The whole file. Errc::not_found if it does not exist, Errc::io (with strerror) otherwise.
Result<std::string> read_file(const std::filesystem::path& path);

// The whole file, like read_file; and if the file's mtime is older than `refresh_after`, sets its
// mtime to now (futimens on the open file: one extra syscall at most once per interval). The
// store's recency record: atime is useless on relatime/noatime mounts. A file that cannot be
// touched (not its owner, no write permission) is still read.
Result<std::string> read_file_refresh(const std::filesystem::path& path,
                                      std::chrono::seconds refresh_after);

// Writes `bytes` to a unique temp file in `path`'s folder (created with mode 02775 if missing),
// fsync-free, then renames it over `path`: readers see the old file, or all of the new one.
// Files get mode 0664 regardless of the umask. The temp file is removed on failure. The writer
// holds a flock on its temp file until it is renamed, so `gc` can tell a temp file whose writer
// died (unlocked) from one being written.
Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

// Appends `bytes` to `path` with one O_APPEND write (created mode 0664, folders 02775): appends
// of concurrent processes never interleave within one call on a local file system.
Result<void> append_file(const std::filesystem::path& path, std::string_view bytes);

// Creates `folder` and its missing parents with mode 02775 whatever the umask; existing folders
// are left as they are.
Result<void> make_folders(const std::filesystem::path& folder);

// For tests (fault injection): while non-zero, every write_file_atomic fails with this errno
// (ENOSPC, EROFS, EACCES, ...) after creating its temp file, as a full disk would.
void inject_write_failure(int error);

// A unique temp-file name for `path`: "<path>.tmp.<pid>.<random hex>".
std::filesystem::path temp_path_for(const std::filesystem::path& path);

}  // namespace cubby::io
