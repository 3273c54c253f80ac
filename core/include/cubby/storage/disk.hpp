// Disk tier: one file per entry under a store folder.
//
// Layout: <root>/entries/<first two hex digits>/<32 hex digits>.entry
// Writes go to a unique temp file (<name>.tmp.<pid>.<random>) in the destination folder, then
// rename(2) publishes it atomically; readers take no lock. Files and folders are created readable
// (and writable) by the group: mode 0664 / 02775, whatever the umask.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "cubby/storage/tier.hpp"

namespace cubby {

// One stored entry as listed by `DiskTier::list`.
struct DiskEntryInfo {
  Key key;
  std::filesystem::path path;
  std::uint64_t bytes = 0;
  std::filesystem::file_time_type modified;
};

class DiskTier final : public Tier {
 public:
  // Does not touch the filesystem; folders are created on the first `put`.
  explicit DiskTier(std::filesystem::path root);

  std::string_view name() const override { return "disk"; }
  Result<std::optional<std::string>> get(const Key& key) override;
  Result<void> put(const Key& key, std::string_view bytes) override;
  Result<void> remove(const Key& key) override;

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path path_of(const Key& key) const;

  // Calls `visit` for every well-named entry file; foreign files and temp files are skipped.
  // A missing store folder lists nothing.
  Result<void> list(const std::function<void(const DiskEntryInfo&)>& visit) const;

  // Removes every entry and temp file (foreign files are left alone). Returns the count removed.
  Result<std::uint64_t> clear();

 private:
  std::filesystem::path root_;
};

}  // namespace cubby
