// The identity of the toolkit's header folder: what the key holds for the headers it does not
// scan (CCCL's <cuda/std/...>, the rest of the toolkit's include/), which ship apart from libnvrtc.
#pragma once

#include <filesystem>
#include <string>

namespace cubby {

// "<file count>;<32 hex>": XXH3-128 over the sorted (path relative to `include_dir`, size) of
// every regular file under `include_dir` (links to files are read through; links to folders are
// not entered). Portable: two installs of the same toolkit headers agree
// whatever their folder or file times. An added, removed, renamed or resized header changes it
// (an edit that keeps the size does not: known limit). Empty for an empty `include_dir`;
// "missing" when it cannot be listed.
std::string toolkit_headers_identity_uncached(const std::filesystem::path& include_dir);

// toolkit_headers_identity_uncached, memoized per process and folder (the first key of a process
// lists the folder: about 2,000 files for CUDA 13). Thread-safe.
std::string toolkit_headers_identity(const std::filesystem::path& include_dir);

}  // namespace cubby
