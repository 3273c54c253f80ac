// Tests for core/src/util/file_trust.cpp: who may have written a file of a group-shared store.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "test_support.hpp"
#include "util/file_trust.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using testing::give_to_another_user;
using testing::TempDir;
using testing::write_text;

struct stat stat_of(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

TEST(FileTrust, AFileOnlyIWriteIsMineAndOneMyGroupOrOthersMayWriteIsNot) {
  TempDir dir("file-trust");
  const fs::path file = dir / "record";
  write_text(file, "mine");
  ::chmod(file.c_str(), 0644);
  EXPECT_TRUE(io::written_only_by_me(stat_of(file), false));
  EXPECT_EQ(io::not_mine_because(stat_of(file), false), "");
  EXPECT_EQ(*io::read_own_file(file, 100), "mine");
  for (const mode_t mode : {0664, 0646}) {
    ::chmod(file.c_str(), mode);
    EXPECT_FALSE(io::written_only_by_me(stat_of(file), true)) << mode;
    const std::string why = io::not_mine_because(stat_of(file), true);
    EXPECT_NE(why.find(mode == 0664 ? "writable by its group (mode 0664)"
                                    : "writable by other users (mode 0646)"),
              std::string::npos)
        << why;
    auto read = io::read_own_file(file, 100);
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().code, Errc::corrupt);
    EXPECT_NE(read.error().message.find(why), std::string::npos) << read.error().message;
  }
  EXPECT_FALSE(io::written_only_by_me(stat_of(dir.path()), true));  // a folder is no file of mine
  EXPECT_EQ(io::read_own_file(dir / "missing", 100).error().code, Errc::not_found);
}

TEST(FileTrust, AFileOfAnotherUserIsNotMineAndTheReasonNamesItsOwner) {
  TempDir dir("file-trust");
  const fs::path file = dir / "record";
  write_text(file, "theirs");
  ::chmod(file.c_str(), 0644);
  if (const std::string why = give_to_another_user(file); !why.empty()) GTEST_SKIP() << why;
  const struct stat st = stat_of(file);
  EXPECT_FALSE(io::written_only_by_me(st, false));
  EXPECT_FALSE(io::written_only_by_me(st, true));  // root_too: root's files, not everyone's
  const std::string why = io::not_mine_because(st, true);
  EXPECT_NE(why.find("is owned by " + io::user_text(st.st_uid)), std::string::npos) << why;
  EXPECT_NE(why.find("uid " + std::to_string(st.st_uid)), std::string::npos) << why;
  EXPECT_NE(why.find("not by you"), std::string::npos) << why;
  EXPECT_FALSE(io::read_own_file(file, 100).ok());
}

TEST(FileTrust, RootsFilesAreTrustedOnlyWhenAsked) {
  // /etc/passwd: root's, mode 0644 on every Linux.
  const struct stat st = stat_of("/etc/passwd");
  ASSERT_EQ(st.st_uid, 0u);
  EXPECT_TRUE(io::written_only_by_me(st, true));
  EXPECT_EQ(io::written_only_by_me(st, false), ::geteuid() == 0);
}

TEST(FileTrust, OwnerWritableFilesAreWrittenMode0644WhateverTheUmask) {
  TempDir dir("file-trust");
  const mode_t old = ::umask(0);
  const auto written = io::write_file_atomic(dir / "f", "x", io::FileMode::owner_writable);
  ::umask(old);
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(stat_of(dir / "f").st_mode & 07777, 0644u);
  EXPECT_TRUE(io::written_only_by_me(stat_of(dir / "f"), false));
}

}  // namespace
}  // namespace cubby
