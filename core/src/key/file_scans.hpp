// The per-process memo of the files a header scan reads (each file's FileScan by path and state,
// shared with the store's scan record), and how a candidate file is read and resolved.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "key/scan_record.hpp"

namespace cubby {

// The per-process memo. `files`: canonical path -> last scan of that file. `candidates`: a path as
// tried (folder + include) -> the canonical path it resolved to and that file's scan, so a warm
// lookup costs one stat. Both are valid while `FileScan::matches` the stat of the path tried; the
// file identity in it (device, inode) ties a candidate to the file `realpath` found. Known limit:
// a hard link reached through a retargeted symlink keeps its earlier canonical path (the content
// hash is still right). Entries are immutable once published.
struct Resolved {
  std::string canonical;
  std::shared_ptr<const FileScan> scan;
};

struct ScanMemo {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const FileScan>> files;
  std::unordered_map<std::string, Resolved> candidates;
  std::atomic<std::uint64_t> files_read{0};
};

// The process's one memo (never destroyed: usable from threads still running at exit).
ScanMemo& scan_memo();

// A per-process table of one kind of memo, by name (forget_header_scans empties it).
template <class Value>
struct MemoTable {
  std::mutex mutex;
  std::unordered_map<std::string, Value> known;
};
template <class Value>
MemoTable<Value>& memo_table() {
  static auto* instance = new MemoTable<Value>();  // never destroyed: usable at exit
  return *instance;
}

// Reads and scans `canonical`. `stable` tells whether the file did not change while it was read
// (only then may the scan be memoized). On a read failure the scan has a zero hash and no
// includes and is not stable (a later call retries).
std::shared_ptr<const FileScan> read_scan(const std::string& canonical, bool& stable);

// realpath(3) of `path`, "" when it fails (a canonical path is never empty).
std::string real_path(const std::string& path);

// The realpath of a candidate's folder ("" when unknown), asked only when needed.
using FolderOf = std::function<const std::string&()>;

// The canonical path and scan of the regular file at `candidate`, whose stat is `st` (from the
// memo, `record` (a store's; null: none), or read): false if its canonical path cannot be found
// (it vanished meanwhile). Memoizes what it read when the file was stable, and adds it to `record`.
bool resolve_file(const std::string& candidate, const struct stat& st, const FolderOf& folder_of,
                  ScanRecord* record, Resolved& out);

}  // namespace cubby
