// Who may have written a file; contracts in file_trust.hpp.
#include "util/file_trust.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "util/io.hpp"

namespace cubby::io {

bool written_only_by_me(const struct stat& st, bool root_too) {
  const uid_t me = ::geteuid();
  return S_ISREG(st.st_mode) && (st.st_uid == me || (root_too && st.st_uid == 0)) &&
         (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

namespace {

// The uids CUBBY_TRUSTED_OWNERS names (unknown names are left out: they trust nobody).
std::vector<uid_t> trusted_owners() {
  std::vector<uid_t> uids;
  const char* text = std::getenv("CUBBY_TRUSTED_OWNERS");
  std::string_view rest = text != nullptr ? text : "";
  while (!rest.empty()) {
    const std::size_t end = std::min(rest.find_first_of(", \t"), rest.size());
    const std::string word(rest.substr(0, end));
    rest.remove_prefix(std::min(end + 1, rest.size()));
    if (word.empty()) continue;
    if (word.find_first_not_of("0123456789") == std::string::npos && word.size() < 10) {
      uids.push_back(static_cast<uid_t>(std::stoul(word)));
      continue;
    }
    std::vector<char> buffer(16384);
    passwd entry{};
    passwd* found = nullptr;
    if (::getpwnam_r(word.c_str(), &entry, buffer.data(), buffer.size(), &found) == 0 &&
        found != nullptr) {
      uids.push_back(found->pw_uid);
    }
  }
  return uids;
}

bool owned_by_trusted(const struct stat& st) {
  for (const uid_t uid : trusted_owners()) {
    if (st.st_uid == uid) return true;
  }
  return false;
}

}  // namespace

bool written_by_trusted(const struct stat& st) {
  return written_only_by_me(st, true) ||
         (S_ISREG(st.st_mode) && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0 && owned_by_trusted(st));
}

std::string not_trusted_because(const struct stat& st) {
  if (written_by_trusted(st)) return {};
  std::string why = not_mine_because(st, true);
  if (S_ISREG(st.st_mode) && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0) {
    why += ", nor by a user CUBBY_TRUSTED_OWNERS names";
  }
  return why;
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
