// A small tmpfs mounted for one test (a real full disk, a read-only remount), unmounted when the
// test ends; root only.
#pragma once

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace cubby::testing {

// A small tmpfs mounted at `mount_point` (made if missing) for one test, unmounted when it ends;
// root only. When it cannot be mounted, `why_not()` says why (the test skips with it).
class SmallTmpfs {
 public:
  SmallTmpfs(const std::filesystem::path& mount_point, const char* size)
      : path_(mount_point), size_(size) {
    if (::geteuid() != 0) {
      why_not_ = "mounting a tmpfs needs root";
      return;
    }
    std::filesystem::create_directories(path_);
    if (::mount("tmpfs", path_.c_str(), "tmpfs", 0, size_) != 0) {
      why_not_ = std::string("cannot mount a tmpfs here (") + std::strerror(errno) + ")";
    }
  }
  ~SmallTmpfs() {
    if (mounted()) ::umount2(path_.c_str(), MNT_DETACH);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;

  bool mounted() const { return why_not_.empty(); }
  const std::string& why_not() const { return why_not_; }
  const std::filesystem::path& path() const { return path_; }
  // Remounts it read-only; false if that failed.
  bool make_read_only() {
    return ::mount("tmpfs", path_.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, size_) == 0;
  }

 private:
  std::filesystem::path path_;
  const char* size_;
  std::string why_not_;
};

}  // namespace cubby::testing
