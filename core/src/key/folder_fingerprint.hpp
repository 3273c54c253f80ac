// The fingerprint of a folder tree: what a key holds for a computed include the scan cannot
// bound (include_scan.hpp), so that it covers every file the include could read.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace cubby {

struct FolderTreeLimits {
  std::size_t max_files = 5'000;           // CCCL has about 1,700 files
  std::uint64_t max_bytes = 256ull << 20;  // read whole, once per file state and process
};

struct FolderTreeFingerprint {
  bool ok = false;
  std::array<std::uint8_t, 16> hash{};  // when ok
  std::size_t files = 0;                // regular files counted (when !ok: up to the bound)
  std::string why;                      // when !ok: which bound, or what could not be read
};

// XXH3-128 over the sorted (path relative to `folder`, content hash) of every regular file under
// `folder` (links to files are read through; links to folders are not entered, as for the
// toolkit's identity, toolkit_headers.hpp). Any added, removed, renamed or edited file changes it;
// two copies of one tree in different folders agree. A missing folder has the fingerprint of an
// empty one. Not ok when the tree has more than `limits.max_files` files or bytes, or a folder or
// file cannot be read. Each file's content hash is memoized per process by path and (device,
// inode, size, mtime, ctime) when both stamps are older than ScanRecord::kTooNewNs before its
// read (the scan record's "too new" rule). Thread-safe.
FolderTreeFingerprint fingerprint_folder_tree(const std::string& folder,
                                              const FolderTreeLimits& limits = {});

// Forgets the per-process memo of file hashes (tests, forget_header_scans).
void forget_folder_fingerprints();

}  // namespace cubby
