// The identity of the toolkit's header folder: what the key holds for the headers it does not
// scan (CCCL's <cuda/std/...>, the rest of the toolkit's include/), which ship apart from libnvrtc.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

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

// The file in `folder` (a store's tmp/) that keeps, between processes, the names the toolkit
// headers reached from one header include (include_scan.cpp's toolkit closure; `digest_hex`: the
// hash naming it): "toolkit-names-<digest_hex>-<effective uid>", one per user like the scan
// record (scan_record.hpp).
std::filesystem::path toolkit_names_file(const std::filesystem::path& folder,
                                         std::string_view digest_hex);

// The text of such a file when only this process's user can have written it (io::read_own_file:
// a regular file of the effective uid, writable by neither its group nor others); nullopt for a
// missing, unreadable or another user's file. It has no checksum: another member of a
// group-shared store could otherwise leave a name out and hide a header from the key.
std::optional<std::string> read_toolkit_names(const std::filesystem::path& file);

// Writes `text` to `file` (a temp file renamed over it, mode 0644 whatever the umask: writable by
// this user only); a failed write costs time only and is not reported.
void write_toolkit_names(const std::filesystem::path& file, std::string_view text);

}  // namespace cubby
