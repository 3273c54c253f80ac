// The walk of a folder tree that both the toolkit's identity (toolkit_headers.hpp) and the tree
// fingerprints (folder_fingerprint.hpp) make: every regular file under a folder, by name in the
// open folder (no path walks).
#pragma once

#include <sys/stat.h>

#include <functional>
#include <string>

namespace cubby {

// Calls `visit(folder_of_file, relative, st)` for every regular file under `folder` (`relative`:
// its path under `folder`; `st`: its stat, through a symlink to a file; folders are entered, never
// through a symlink; other entries are skipped) until `visit` returns false. Returns false when
// `visit` did, or when a folder could not be listed (`unlisted` then names it); true otherwise.
bool walk_regular_files(
    const std::string& folder,
    const std::function<bool(const std::string& folder_of_file, const std::string& relative,
                             const struct stat& st)>& visit,
    std::string* unlisted = nullptr);

}  // namespace cubby
