// The folder of one process's precompiled headers (NVRTC's automatic PCH, CUBBY_PCH) in a store:
// $CUBBY_DIR/tmp/pch.tmp.<pid>.<16 hex>/ (mode 0700: only its process writes there), beside its
// lock file <folder>.lock, which the process
// takes before it makes the folder and holds while it lives. PCH files are valid only in the
// process that made them (NVRTC refuses another process's), about 100 MB each: the folder goes
// when the process exits, and `cubby gc` removes the folders of processes that died (their lock
// is free: the kernel drops a dead owner's flock).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>

#include "storage/local/lock.hpp"

namespace cubby {

class PchDir {
 public:
  // This process's PCH folder in the store at `root`, made on first use and shared by every Cache
  // of the process on that store until the process exits; nullptr when it cannot be made (a
  // read-only store, ...): then compiles go without PCH. Thread-safe.
  static std::shared_ptr<PchDir> of_store(const std::filesystem::path& root);

  // Removes the folder (the files NVRTC made in it) and releases the lock. In a forked child it
  // leaves both to the parent.
  ~PchDir();
  PchDir(const PchDir&) = delete;
  PchDir& operator=(const PchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // The sub-folder `name` (16 lowercase hex digits: one set of options and headers) of this
  // folder, made now when missing (`made` true) with mode 0700. Empty when `name` is not such a
  // name, cannot be made, or is anything but a folder this user owns with no access for others:
  // a link planted there (in a group-writable store) is never followed, so NVRTC never writes its
  // PCH into a link's target. Thread-safe.
  std::filesystem::path fingerprint_folder(std::string_view name, bool& made) const;

  // Removes the PCH files NVRTC wrote in fingerprint folder `name` (a header changed while they
  // were made: they must not serve later compiles), then the folder if it is left empty (the next
  // compile of that set makes it again). Nothing is followed.
  void discard(std::string_view name) const;

  // Removes the folder now (idempotent); what the destructor and the process's exit do.
  void remove();

 private:
  PchDir(std::filesystem::path path, FileLock lock);

  std::filesystem::path path_;
  FileLock lock_;
  int owner_pid_;
  bool removed_ = false;
};

// What remove_dead_pch_dirs removed.
struct PchCleanup {
  std::uint64_t folders = 0;
  std::uint64_t bytes = 0;
};

// Removes the PCH folders of processes that are gone from the store at `root` (for `cubby gc`):
// in each tmp/pch.tmp.<pid>.<16 hex>/ whose lock no one holds, the regular files named *.pch
// (what NVRTC writes there), then the folder if nothing else is in it; and lock files of such
// names that no one holds. Nothing is followed through a link; other names are left alone.
PchCleanup remove_dead_pch_dirs(const std::filesystem::path& root);

}  // namespace cubby
