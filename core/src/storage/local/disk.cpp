// Disk tier: one file per entry, published by rename; layout in storage/local/disk.hpp.
#include "storage/local/disk.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "util/bytes.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kEntrySuffix = ".entry";
constexpr std::size_t kKeyHexSize = 32;

bool is_shard_name(std::string_view name) { return name.size() == 2 && is_lower_hex(name); }

// The key of a well-named entry file ("<32 lowercase hex>.entry") in shard `shard`, or false.
bool key_of_entry_name(std::string_view name, std::string_view shard, Key& key) {
  if (name.size() != kKeyHexSize + kEntrySuffix.size()) return false;
  if (name.substr(kKeyHexSize) != kEntrySuffix) return false;
  const std::string_view hex = name.substr(0, kKeyHexSize);
  if (!is_lower_hex(hex) || hex.substr(0, 2) != shard) return false;
  return from_hex(hex, key.bytes.data()) == std::string_view::npos;
}

// A temp file of a well-named entry: "<32 hex>.entry.tmp.<pid>.<16 hex>" (io::temp_path_for).
bool is_temp_name(std::string_view name, std::string_view shard) {
  const std::size_t stem = kKeyHexSize + kEntrySuffix.size();
  Key unused;
  return name.size() > stem && key_of_entry_name(name.substr(0, stem), shard, unused) &&
         io::is_temp_name_of(name.substr(0, stem), name);
}

// A per-key lock file: "<32 hex>.lock" in the shard of its first two digits.
bool is_lock_name(std::string_view name, std::string_view shard) {
  constexpr std::string_view kLockSuffix = ".lock";
  return name.size() == kKeyHexSize + kLockSuffix.size() && name.ends_with(kLockSuffix) &&
         is_lower_hex(name.substr(0, kKeyHexSize)) && name.substr(0, 2) == shard;
}

// The store walk: calls `visit(shard_fd, shard_path, shard, name)` for every name in every shard
// folder ("<2 hex>" starting with `prefix`) of <root>/<area>. The area and shard folders are
// opened with O_NOFOLLOW (io::for_each_name): links there are not walked, foreign sub-folders
// are never entered. Files and folders that vanish meanwhile are skipped.
template <class Visit>
Result<void> for_each_shard_file(const fs::path& root, std::string_view area,
                                 std::string_view prefix, Visit&& visit) {
  const fs::path folder = root / area;
  Result<void> inner;
  auto outer = io::for_each_name(folder, [&](int area_fd, std::string_view shard) {
    if (!inner.ok() || !is_shard_name(shard) || !shard.starts_with(prefix)) return;
    const fs::path shard_path = folder / shard;
    inner = io::for_each_name(
        shard_path,
        [&](int shard_fd, std::string_view name) { visit(shard_fd, shard_path, shard, name); },
        area_fd);
  });
  if (!outer) return outer;
  return inner;
}

std::filesystem::file_time_type file_time_of(const struct stat& status) {
  const auto since_epoch = std::chrono::seconds(status.st_mtim.tv_sec) +
                           std::chrono::nanoseconds(status.st_mtim.tv_nsec);
  return std::chrono::file_clock::from_sys(std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(since_epoch)));
}

Result<std::optional<std::string>> found_or_missing(Result<std::string> bytes) {
  if (bytes) return std::optional<std::string>(std::move(bytes).value());
  if (bytes.error().code == Errc::not_found) return std::optional<std::string>();
  return std::move(bytes).error();
}

}  // namespace

DiskTier::DiskTier(std::filesystem::path root, std::chrono::seconds refresh_after)
    : root_(std::move(root)), refresh_after_(refresh_after) {}

std::filesystem::path DiskTier::lock_path_of(const Key& key) const {
  const std::string hex = key.hex();
  return root_ / "locks" / hex.substr(0, 2) / (hex + ".lock");
}

std::filesystem::path DiskTier::path_of(const Key& key) const {
  const std::string hex = key.hex();
  return entries_dir() / hex.substr(0, 2) / (hex + std::string(kEntrySuffix));
}

Result<std::optional<std::string>> DiskTier::peek(const Key& key) const {
  return found_or_missing(io::read_file(path_of(key), kMaxEntryBytes));
}

Result<std::optional<std::string>> DiskTier::get(const Key& key) {
  return found_or_missing(io::read_file_refresh(path_of(key), refresh_after_, kMaxEntryBytes));
}

Result<void> DiskTier::put(const Key& key, std::string_view bytes) {
  if (bytes.size() > kMaxEntryBytes) {
    return fail(Errc::invalid_argument, "an entry of ", std::to_string(bytes.size()),
                " bytes is over the disk tier's bound of ", std::to_string(kMaxEntryBytes),
                " bytes; it is not stored (the result is still used)");
  }
  return io::write_file_atomic(path_of(key), bytes);
}

Result<void> DiskTier::remove(const Key& key) {
  const fs::path path = path_of(key);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    const int error = errno;
    return fail(Errc::io, "cannot remove ", path.string(), ": ", std::strerror(error),
                " (the store's group needs write access to its folders, mode 02775)");
  }
  return {};
}

Result<void> DiskTier::list(const std::function<void(const DiskEntryInfo&)>& visit,
                            std::string_view shard_prefix, NonRegular non_regular) const {
  return for_each_shard_file(
      root_, "entries", shard_prefix,
      [&](int shard_fd, const fs::path& shard_path, std::string_view shard, std::string_view name) {
        DiskEntryInfo info;
        if (!key_of_entry_name(name, shard, info.key)) return;
        // One lstat per entry (never following a link): `gc` lists 100,000 entries in under 1 s.
        struct stat status {};
        if (::fstatat(shard_fd, std::string(name).c_str(), &status, AT_SYMLINK_NOFOLLOW) != 0) {
          return;  // removed meanwhile
        }
        info.regular = S_ISREG(status.st_mode);
        if (!info.regular && non_regular == NonRegular::skip) return;
        info.bytes = info.regular ? static_cast<std::uint64_t>(status.st_size) : 0;
        info.modified = file_time_of(status);
        info.path = shard_path / name;
        visit(info);
      });
}

Result<void> DiskTier::list_temp(const std::function<void(const fs::path&)>& visit) const {
  return for_each_shard_file(
      root_, "entries", {},
      [&](int, const fs::path& shard_path, std::string_view shard, std::string_view name) {
        if (is_temp_name(name, shard)) visit(shard_path / name);
      });
}

Result<void> DiskTier::list_locks(
    const std::function<void(int shard_fd, std::string_view name)>& visit) const {
  return for_each_shard_file(
      root_, "locks", {},
      [&](int shard_fd, const fs::path&, std::string_view shard, std::string_view name) {
        if (is_lock_name(name, shard)) visit(shard_fd, name);
      });
}

Result<std::uint64_t> DiskTier::clear() {
  std::uint64_t removed = 0;
  Result<void> failure;
  auto walked = for_each_shard_file(
      root_, "entries", {},
      [&](int shard_fd, const fs::path& shard_path, std::string_view shard, std::string_view name) {
        Key unused;
        if (!key_of_entry_name(name, shard, unused) && !is_temp_name(name, shard)) return;
        // unlinkat without AT_REMOVEDIR: removes a link or FIFO itself, fails on a folder.
        if (::unlinkat(shard_fd, std::string(name).c_str(), 0) == 0) {
          ++removed;
        } else if (errno != ENOENT && errno != EISDIR && failure.ok()) {
          const int error = errno;
          failure = fail(Errc::io, "cannot remove ", (shard_path / name).string(), ": ",
                         std::strerror(error),
                         " (the store's group needs write access to its folders, mode 02775)");
        }
      });
  if (!walked) return walked.error();
  if (!failure) return failure.error();
  return removed;
}

}  // namespace cubby
