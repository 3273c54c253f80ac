// Internal file helpers shared by the tiers, the key scanner and the CLI.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "cubby/error.hpp"

namespace cubby::io {

// The whole file. Errc::not_found if it does not exist, Errc::io (with strerror) otherwise.
Result<std::string> read_file(const std::filesystem::path& path);

// Writes `bytes` to a unique temp file in `path`'s folder (created with mode 02775 if missing),
// fsync-free, then renames it over `path`: readers see the old file, or all of the new one.
// Files get mode 0664 regardless of the umask. The temp file is removed on failure.
Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

// A unique temp-file name for `path`: "<path>.tmp.<pid>.<random hex>".
std::filesystem::path temp_path_for(const std::filesystem::path& path);

}  // namespace cubby::io
