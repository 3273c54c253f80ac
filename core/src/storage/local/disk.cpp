// Disk tier: one file per entry, published by rename; layout in cubby/storage/disk.hpp.
#include "cubby/storage/disk.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "io.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kEntrySuffix = ".entry";
constexpr std::string_view kTempMarker = ".tmp.";
constexpr std::size_t kKeyHexSize = 32;

bool is_lower_hex(std::string_view text) {
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

int hex_value(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

bool is_shard_name(std::string_view name) { return name.size() == 2 && is_lower_hex(name); }

// The key of a well-named entry file ("<32 lowercase hex>.entry") in shard `shard`, or false.
bool key_of_entry_name(std::string_view name, std::string_view shard, Key& key) {
  if (name.size() != kKeyHexSize + kEntrySuffix.size()) return false;
  if (name.substr(kKeyHexSize) != kEntrySuffix) return false;
  const std::string_view hex = name.substr(0, kKeyHexSize);
  if (!is_lower_hex(hex) || hex.substr(0, 2) != shard) return false;
  for (std::size_t i = 0; i < key.bytes.size(); ++i) {
    key.bytes[i] =
        static_cast<std::uint8_t>(hex_value(hex[2 * i]) * 16 + hex_value(hex[2 * i + 1]));
  }
  return true;
}

// A temp file of a well-named entry: "<32 hex>.entry.tmp.<anything>".
bool is_temp_name(std::string_view name, std::string_view shard) {
  const std::size_t stem = kKeyHexSize + kEntrySuffix.size();
  if (name.size() <= stem + kTempMarker.size()) return false;
  Key unused;
  return key_of_entry_name(name.substr(0, stem), shard, unused) &&
         name.substr(stem, kTempMarker.size()) == kTempMarker;
}

Failure list_failure(const fs::path& folder, const std::error_code& error) {
  return fail(Errc::io, "cannot list ", folder.string(), ": ", error.message(),
              " (check the store folder's permissions or point CUBBY_DIR elsewhere)");
}

// Calls `visit(shard_path, shard_name, file_name)` for every file in every shard folder.
// Files and folders that vanish meanwhile (a concurrent remove or clear) are skipped.
template <class Visit>
Result<void> for_each_shard_file(const fs::path& root, std::string_view prefix, Visit&& visit) {
  const fs::path entries = root / "entries";
  std::error_code error;
  fs::directory_iterator shards(entries, error);
  if (error) {
    if (error == std::errc::no_such_file_or_directory) return {};
    return list_failure(entries, error);
  }
  for (; shards != fs::directory_iterator(); shards.increment(error)) {
    if (error) return list_failure(entries, error);
    const std::string shard = shards->path().filename().string();
    if (!is_shard_name(shard) || !shard.starts_with(prefix) || !shards->is_directory(error)) {
      continue;
    }
    fs::directory_iterator files(shards->path(), error);
    if (error) {
      if (error == std::errc::no_such_file_or_directory) continue;
      return list_failure(shards->path(), error);
    }
    for (; files != fs::directory_iterator(); files.increment(error)) {
      if (error) return list_failure(shards->path(), error);
      visit(files->path(), shard, files->path().filename().string());
    }
    if (error) return list_failure(shards->path(), error);
  }
  if (error) return list_failure(entries, error);
  return {};
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
  auto bytes = io::read_file(path_of(key));
  if (bytes) return std::optional<std::string>(std::move(*bytes));
  if (bytes.error().code == Errc::not_found) return std::optional<std::string>();
  return bytes.error();
}

Result<std::optional<std::string>> DiskTier::get(const Key& key) {
  auto bytes = io::read_file_refresh(path_of(key), refresh_after_);
  if (bytes) return std::optional<std::string>(std::move(*bytes));
  if (bytes.error().code == Errc::not_found) return std::optional<std::string>();
  return bytes.error();
}

Result<void> DiskTier::put(const Key& key, std::string_view bytes) {
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
                            std::string_view shard_prefix) const {
  return for_each_shard_file(
      root_, shard_prefix,
      [&](const fs::path& path, std::string_view shard, std::string_view name) {
        DiskEntryInfo info;
        if (!key_of_entry_name(name, shard, info.key)) return;
        struct stat status {};  // one stat per entry: `gc` lists 100,000 entries in well under 1 s
        if (::stat(path.c_str(), &status) != 0 || !S_ISREG(status.st_mode)) return;
        info.bytes = static_cast<std::uint64_t>(status.st_size);
        const auto since_epoch = std::chrono::seconds(status.st_mtim.tv_sec) +
                                 std::chrono::nanoseconds(status.st_mtim.tv_nsec);
        info.modified = std::chrono::file_clock::from_sys(std::chrono::system_clock::time_point(
            std::chrono::duration_cast<std::chrono::system_clock::duration>(since_epoch)));
        info.path = path;
        visit(info);
      });
}

Result<void> DiskTier::list_temp(const std::function<void(const fs::path&)>& visit) const {
  return for_each_shard_file(
      root_, {}, [&](const fs::path& path, std::string_view shard, std::string_view name) {
        if (is_temp_name(name, shard)) visit(path);
      });
}

Result<std::uint64_t> DiskTier::clear() {
  std::uint64_t removed = 0;
  Result<void> failure;
  auto walked = for_each_shard_file(
      root_, {}, [&](const fs::path& path, std::string_view shard, std::string_view name) {
        Key unused;
        if (!key_of_entry_name(name, shard, unused) && !is_temp_name(name, shard)) return;
        if (::unlink(path.c_str()) == 0) {
          ++removed;
        } else if (errno != ENOENT && failure.ok()) {
          const int error = errno;
          failure = fail(Errc::io, "cannot remove ", path.string(), ": ", std::strerror(error),
                         " (the store's group needs write access to its folders, mode 02775)");
        }
      });
  if (!walked) return walked.error();
  if (!failure) return failure.error();
  return removed;
}

}  // namespace cubby
