// Who may have written a file; contracts in file_trust.hpp.
#include "util/file_trust.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "util/io.hpp"

namespace cubby::io {

bool written_only_by_me(const struct stat& st, bool root_too) {
  const uid_t me = ::geteuid();
  return S_ISREG(st.st_mode) && (st.st_uid == me || (root_too && st.st_uid == 0)) &&
         (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

std::string user_text(uid_t uid) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  std::string number = "uid " + std::to_string(uid);
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr ||
      found->pw_name == nullptr) {
    return number;
  }
  return std::string(found->pw_name) + " (" + number + ")";
}

std::string not_mine_because(const struct stat& st, bool root_too) {
  if (written_only_by_me(st, root_too)) return {};
  if (!S_ISREG(st.st_mode)) return "is " + file_type_name(st.st_mode) + ", not a regular file";
  const uid_t me = ::geteuid();
  if (st.st_uid != me && !(root_too && st.st_uid == 0)) {
    return "is owned by " + user_text(st.st_uid) + ", not by you (" + user_text(me) + ")" +
           (root_too ? " or root" : "");
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return std::string("is writable by ") +
         ((st.st_mode & S_IWGRP) != 0 ? "its group" : "other users") + " (mode " + mode + ")";
}

Result<std::string> read_own_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                                  struct stat* opened) {
  struct stat info {};
  auto text = read_file(path, max_bytes, &info);
  if (opened != nullptr) *opened = info;
  if (!text) return text;
  if (!written_only_by_me(info, false)) {
    return fail(Errc::corrupt, path.string(), " ", not_mine_because(info, false),
                ": another user may have written it, so it is not read");
  }
  return text;
}

}  // namespace cubby::io
