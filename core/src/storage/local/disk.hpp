// Disk tier: one file per entry under a store folder.
//
// Layout: <root>/entries/<first two hex digits>/<32 hex digits>.entry
// Writes go to a unique temp file (<name>.tmp.<pid>.<16 random hex>, created O_EXCL|O_NOFOLLOW)
// in the destination folder, then rename(2) publishes it atomically; readers take no lock. Files
// and folders are created readable (and writable) by the group: mode 0664 / 02775, whatever the
// umask.
//
// Only a regular file of at most kMaxEntryBytes is read as an entry: readers open it with
// O_NOFOLLOW | O_NONBLOCK and check it with fstat first, so a link, a FIFO, a device, a socket
// or a folder at an entry path is refused at once (a miss, never a hang, never followed). The
// store walk (`list`, `list_temp`, `list_locks`, `clear`) opens the entries/ and locks/ folders
// and their shard folders with O_NOFOLLOW: a link there is not walked.
//
// Recency (for least-recently-used eviction) is the entry file's mtime: `get` sets it to now when
// it is older than the tier's refresh interval, so a hit costs one extra syscall at most once per
// interval and atime (useless on relatime/noatime mounts) is never needed.
// Per-key locks (cross-process single flight) live beside the entries, see lock_path_of.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "config/store_config.hpp"  // kMaxEntryBytes
#include "storage/tier.hpp"

namespace cubby {

// One stored entry as listed by `DiskTier::list`.
struct DiskEntryInfo {
  Key key;
  std::filesystem::path path;
  std::uint64_t bytes = 0;
  std::filesystem::file_time_type modified;
  // False for anything but a regular file at the entry path: a link (never followed), a FIFO, a
  // device, a socket, a folder. cubby never makes one; readers refuse it, `verify` reports it,
  // `verify --fix` and `gc` remove it. Listed only with NonRegular::include; `bytes` is 0.
  bool regular = true;
};

// Whether DiskTier::list visits non-regular files at entry paths.
enum class NonRegular : std::uint8_t { skip, include };

class DiskTier final : public Tier {
 public:
  // How stale an entry's mtime may get before a hit refreshes it (the recency resolution).
  static constexpr std::chrono::seconds kDefaultRefresh{600};

  // Does not touch the filesystem; folders are created on the first `put`.
  explicit DiskTier(std::filesystem::path root,
                    std::chrono::seconds refresh_after = kDefaultRefresh);

  // Errc::corrupt if the entry path holds a link, a FIFO, a device, a socket, a folder or a file
  // over kMaxEntryBytes (found without following or reading it); `remove` unlinks such a file.
  Result<std::optional<std::string>> get(const Key& key) override;
  // Errc::invalid_argument for an entry over kMaxEntryBytes (it would never be read).
  Result<void> put(const Key& key, std::string_view bytes) override;
  Result<void> remove(const Key& key) override;

  // get() without the recency refresh: for admin reads (`ls`, `show`, `verify`, `export`) that
  // must not make an entry look recently used.
  Result<std::optional<std::string>> peek(const Key& key) const;

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path path_of(const Key& key) const;
  // <root>/entries: missing until the first entry is written (a fresh store).
  std::filesystem::path entries_dir() const { return root_ / "entries"; }
  // <root>/locks/<2 hex>/<32 hex>.lock: the per-key lock a compiling process holds.
  std::filesystem::path lock_path_of(const Key& key) const;

  // Calls `visit` for every well-named entry file that is a regular file (with
  // NonRegular::include, for anything else at a well-named entry path too, `regular` false);
  // foreign names and temp files are skipped. With a non-empty `shard_prefix` ("a" or "3f"), only
  // shards whose name starts with it. A missing store folder lists nothing.
  Result<void> list(const std::function<void(const DiskEntryInfo&)>& visit,
                    std::string_view shard_prefix = {},
                    NonRegular non_regular = NonRegular::skip) const;

  // Calls `visit` for every temp file of an entry (a write in progress or left by a killed one).
  Result<void> list_temp(const std::function<void(const std::filesystem::path&)>& visit) const;

  // Calls `visit(shard_fd, name)` for every per-key lock file name (lock_path_of's
  // "<32 hex>.lock" in the shard folder of its first two digits) under <root>/locks; `shard_fd`
  // is the open shard folder, for *at calls. Other names (foreign files, gc.lock, stats.lock,
  // sub-folders) are never visited.
  Result<void> list_locks(
      const std::function<void(int shard_fd, std::string_view name)>& visit) const;

  // Removes every entry and temp file (foreign names are left alone; so is a folder at an entry
  // path, a non-regular file there is removed, never followed). Returns the count removed.
  Result<std::uint64_t> clear();

 private:
  std::filesystem::path root_;
  std::chrono::seconds refresh_after_;
};

}  // namespace cubby
