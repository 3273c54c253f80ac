// Which file systems' stats prove a header unchanged; contract in key/file_system_trust.hpp.
#include "key/file_system_trust.hpp"

#include <sys/statfs.h>

#include <map>
#include <mutex>

#include "util/io.hpp"

namespace cubby {
namespace {

constexpr std::uint32_t kOverlay = 0x794C7630u;

bool octal(char c) { return c >= '0' && c <= '7'; }

// A mountinfo field with its octal escapes (\040 for a space) decoded.
std::string unescaped(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && octal(field[i + 1]) && octal(field[i + 2]) &&
        octal(field[i + 3])) {
      out += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                               (field[i + 3] - '0'));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

// Whether `mount_point` holds `path` (a prefix at a '/' boundary).
bool holds(const std::string& mount_point, const std::string& path) {
  if (mount_point == "/") return !path.empty() && path.front() == '/';
  return path.starts_with(mount_point) &&
         (path.size() == mount_point.size() || path[mount_point.size()] == '/');
}

}  // namespace

bool trusted_file_system(std::int64_t f_type) {
  switch (static_cast<std::uint32_t>(f_type)) {
    case 0xEF53u:      // ext2, ext3, ext4
    case 0x58465342u:  // XFS
    case 0x9123683Eu:  // Btrfs
    case 0x01021994u:  // tmpfs
    case kOverlay:     // overlayfs (its lower layers: stat_trusted)
    case 0xF2F52010u:  // F2FS
    case 0x2FC12FC1u:  // ZFS
    case 0x858458F6u:  // ramfs
      return true;
    default:
      // NFS, CIFS/SMB, FUSE, 9p, Ceph, Lustre ...: changes elsewhere go unseen. SquashFS
      // (0x73717368), EROFS (0xE0F5E1E2), ISO 9660 (0x9660): a rebuilt image at the same path
      // keeps every stat field.
      return false;
  }
}

std::vector<std::string> overlay_lower_dirs(std::string_view mountinfo, const std::string& path) {
  std::string best_point;
  std::vector<std::string> best_lowers;
  bool found = false;
  for (const std::string_view line : split(mountinfo, '\n')) {
    const std::vector<std::string_view> fields = split(line, ' ');
    std::size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (fields.size() < 5 || dash + 3 >= fields.size()) continue;
    const std::string point = unescaped(fields[4]);
    if (!holds(point, path) || (found && point.size() < best_point.size())) continue;
    found = true;
    best_point = point;
    best_lowers.clear();
    if (fields[dash + 1] != "overlay") continue;
    for (const std::string_view option : split(fields[dash + 3], ',')) {
      if (!option.starts_with("lowerdir=")) continue;
      for (const std::string_view dir : split(option.substr(9), ':')) {
        if (!dir.empty()) best_lowers.push_back(unescaped(dir));
      }
    }
  }
  return best_lowers;
}

bool stat_trusted(const std::string& path, std::int64_t f_type) {
  if (!trusted_file_system(f_type)) return false;
  if (static_cast<std::uint32_t>(f_type) != kOverlay) return true;
  auto mountinfo = io::read_file("/proc/self/mountinfo", std::uint64_t{16} << 20);
  if (!mountinfo) return true;  // no /proc: as before, overlayfs is trusted
  static std::mutex mutex;
  static auto* known = new std::map<std::vector<std::string>, bool>();  // never destroyed
  const std::vector<std::string> lowers = overlay_lower_dirs(*mountinfo, path);
  {
    const std::lock_guard lock(mutex);
    if (const auto found = known->find(lowers); found != known->end()) return found->second;
  }
  bool trusted = true;
  for (const std::string& lower : lowers) {
    struct statfs fs {};
    if (::statfs(lower.c_str(), &fs) == 0 &&
        !trusted_file_system(static_cast<std::int64_t>(fs.f_type))) {
      trusted = false;
    }
  }
  const std::lock_guard lock(mutex);
  known->emplace(lowers, trusted);
  return trusted;
}

bool device_trusted(const std::string& path, dev_t dev) {
  static std::mutex mutex;
  static auto* known = new std::map<dev_t, bool>();  // never destroyed
  {
    const std::lock_guard lock(mutex);
    if (const auto found = known->find(dev); found != known->end()) return found->second;
  }
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return false;
  const bool trusted = stat_trusted(path, static_cast<std::int64_t>(fs.f_type));
  const std::lock_guard lock(mutex);
  known->emplace(dev, trusted);
  return trusted;
}

}  // namespace cubby
