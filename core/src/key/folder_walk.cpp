// The walk of a folder tree; contract in folder_walk.hpp.
#include "key/folder_walk.hpp"

#include <fcntl.h>

#include <string_view>

#include "util/io.hpp"

namespace cubby {
namespace {

using Visit = std::function<bool(const std::string&, const std::string&, const struct stat&)>;

bool walk(const std::string& folder, const std::string& relative, int parent_fd, const Visit& visit,
          std::string* unlisted) {
  bool ok = true;
  const auto listed = io::for_each_name(
      folder,
      [&](int fd, std::string_view name) {
        if (!ok) return;
        const std::string file(name);
        struct stat st {};
        if (::fstatat(fd, file.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
        const std::string path = relative.empty() ? file : relative + "/" + file;
        if (S_ISDIR(st.st_mode)) {
          ok = walk(folder + "/" + file, path, fd, visit, unlisted);
          return;
        }
        if (S_ISLNK(st.st_mode) && ::fstatat(fd, file.c_str(), &st, 0) != 0) return;
        if (S_ISREG(st.st_mode)) ok = visit(folder, path, st);
      },
      parent_fd);
  if (ok && !listed.ok()) {
    if (unlisted != nullptr) *unlisted = folder;
    return false;
  }
  return ok;
}

}  // namespace

bool walk_regular_files(const std::string& folder, const Visit& visit, std::string* unlisted) {
  return walk(folder, "", AT_FDCWD, visit, unlisted);
}

}  // namespace cubby
