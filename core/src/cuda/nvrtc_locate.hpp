// Internal parts of locating libnvrtc (see locate_nvrtc in cubby/nvrtc.hpp), exposed for tests.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "cubby/error.hpp"
#include "cubby/nvrtc.hpp"

namespace cubby::detail {

// The folders locate_nvrtc searches, in order, from the current environment (duplicates and
// empty entries removed; CUBBY_NVRTC_LIBRARY is not a folder and is not listed).
std::vector<std::filesystem::path> nvrtc_search_folders();

// locate_nvrtc without the per-process memo: reads the environment and the file system on every
// call. Same contract otherwise.
Result<NvrtcLibrary> locate_nvrtc_uncached();

// The GNU build-id (NT_GNU_BUILD_ID note) of an ELF64 little-endian file as lowercase hex, read
// from its program headers (only the header and note bytes are read). Empty when the file cannot
// be read, is not ELF64 little-endian, or carries no build-id.
std::string elf_build_id(const std::filesystem::path& file);

// "major.minor" from the single libnvrtc-builtins.so.<major>.<minor> file in `folder` whose
// major is `major` (any major when `major` < 0). Empty when there is none or more than one.
std::string builtins_version_in(const std::filesystem::path& folder, int major);

}  // namespace cubby::detail
