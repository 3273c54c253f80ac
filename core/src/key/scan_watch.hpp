// A per-process memo of whole header scans, kept true by the kernel's file change notifications
// (inotify): a warm process asks for the same programs' keys again and again (a CuPy test file:
// 25 mdspan modules, each scan ~300 headers through six include folders, ~4 ms), and while no
// file or folder a scan looked at has changed, its result is the same.
//
// Contract. A memoized scan is returned only while nothing it depends on can have changed. It
// depends on names, not on whole folders: a folder where other files come and go (/tmp, a build
// folder, the working folder of a test run) keeps it.
// - every name the scan asked of a folder (a first component looked up in its listing, a
//   candidate file) is watched in that folder (created, deleted, renamed; names compared with
//   ASCII case folded, and any non-ASCII name counts, as the listing compares them); the folder
//   itself moved or deleted counts too;
// - every header file it found is watched (written, truncated, closed after writing, attributes,
//   deleted, moved), by the path it was found at, so a write through any hard link or symlink
//   counts;
// - every folder above those names up to "/" is watched for the one entry on the way down
//   (renamed, deleted or replaced: a symlink retargeted, a folder swapped); for a path that does
//   not exist, from its nearest existing folder up;
// - before a scan is remembered, its watches are in place and everything is looked at again:
//   each folder is the same folder (device, inode) or still absent, each name asked of a
//   listing gets the same answer, each candidate that was absent still is, and each file matches
//   what the scan saw (device, inode, size, mtime, ctime) and is not newer than `too_new_ns`
//   before the scan began (the scan record's rule: a change within a time stamp's tick is not
//   visible in it). So a change before the watch is seen by the second look, a change after it
//   by an event.
// Any event on any watch forgets every memoized scan and every watch (the next scans start
// again: one re-scan per program, then memoized again). So do a queue overflow, a watch the
// kernel dropped and a fork (a child never reads its parent's notification queue: it starts its
// own). Nothing is memoized, and every lookup scans as before, where notifications cannot be
// trusted or had: a folder on a file system whose changes from other machines the kernel does
// not see (only local ones are trusted: ext2/3/4, XFS, Btrfs, tmpfs, overlayfs, F2FS, ZFS,
// SquashFS, ramfs), inotify unavailable or out of instances or watches, or CUBBY_SCAN_WATCH=0.
// Known limits: a header changed through a shared writable mmap is not reported by the kernel
// (as for any notification-based tool), and a folder's own permissions changed (chmod) are not
// watched (a folder's attribute events would make each watch cost a walk of its entries); the
// next process sees both.
// The toolkit part of a scan is memoized per process anyway (toolkit_headers.hpp).
// Thread-safe.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "key/include_scan.hpp"

namespace cubby {

class ScanWatch {
 public:
  // What one scan looked at, with what it saw.
  struct Folder {
    std::string path;
    bool is_dir = false;
    struct stat st {};  // when is_dir
    // Names the scan asked of the folder's listing, with the answer (NameSet::may_contain).
    std::vector<std::pair<std::string, bool>> asked;
    bool every_name = false;  // the scan relied on the folder being empty
  };
  struct File {
    std::string path;  // as found (an include folder + the name), not canonical
    struct stat st {};
  };
  struct Looked {
    std::vector<Folder> folders;
    std::vector<File> files;
    std::vector<std::string> absent;  // candidate files the scan found no file at
    // The folder of every file and absent candidate is among `folders`.
  };

  // The process's one instance.
  static ScanWatch& process();

  // The memoized scan for `memo_key` (shared, not copied: null when there is none) (a hash of
  // everything the scan reads besides files and the source's macro calls), if it is still true;
  // reads pending notifications first. `calls`: the source's IncludeList::calls ("W <x>"): a scan
  // holds for another source whose calls of the scan's include-test macros are the same (a call of
  // any other name changes nothing: CuPy's modules differ in their code, not in their includes).
  std::shared_ptr<const HeaderScan> find(const std::string& memo_key,
                                         const std::vector<std::string>& calls);

  // Remembers `scan` for `memo_key` if its watches can be set up and it passes the second look
  // (still_true): whether it did. `macros`: every include-test macro the scan knew in the end;
  // `calls`: the source's calls; `limit_ns`: CLOCK_REALTIME taken before the scan read anything,
  // less the "too new" window (ScanRecord::too_new_ns).
  bool remember(const std::string& memo_key, std::shared_ptr<const HeaderScan> scan,
                const std::set<std::string, std::less<>>& macros,
                const std::vector<std::string>& calls, const Looked& looked, std::int64_t limit_ns);

  // Whether everything `looked` saw is still so (the second look of the contract above, with no
  // watch): each folder is the same folder or still absent, each name asked of it gets the same
  // answer (a folder in the state it was seen in and changed before `limit_ns` is not listed
  // again: an entry added or removed changes its mtime and ctime), each file matches what was
  // seen and was changed before `limit_ns`, and each absent candidate is still no file. What a
  // scan saw in another process holds now if this says so (scan_book.hpp).
  static bool still_true(const Looked& looked, std::int64_t limit_ns);

  // The calls among `calls` ("W ...") whose macro W is in `macros`, in order.
  static std::vector<std::string> calls_of(const std::vector<std::string>& calls,
                                           const std::set<std::string, std::less<>>& macros);

  // Forgets every memoized scan and watch (tests, forget_header_scans).
  void forget();

  // How many scans this process answered from the memo (a diagnostic for tests and benchmarks).
  std::uint64_t served() const;

  struct State;

 private:
  ScanWatch();
  std::unique_ptr<State> state_;
};

}  // namespace cubby
