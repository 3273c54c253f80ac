// Tests for core/src/key/toolkit_headers.cpp: the toolkit header folder's identity, which the
// key holds because CCCL and other toolkit headers ship apart from libnvrtc (issue 23), and the
// per-user files that keep the names the toolkit headers include (issue 34).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "key/include_scan.hpp"
#include "key/scan_place.hpp"
#include "key/toolkit_headers.hpp"
#include "test_support.hpp"
#include "util/hash.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using testing::give_to_another_user;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

void make_toolkit(const fs::path& include) {
  write_text(include / "tkhdr.h", "#define TK 1\n");
  write_text(include / "cuda" / "std" / "version", "#pragma once\n");
}

TEST(ToolkitHeadersIdentity, AnEditedAddedOrRemovedHeaderChangesItItsFolderDoesNot) {
  TempDir dir("toolkit-headers");
  make_toolkit(dir / "a" / "include");
  make_toolkit(dir / "b" / "include");
  const std::string a = toolkit_headers_identity_uncached(dir / "a" / "include");
  EXPECT_EQ(a.substr(0, 2), "2;");
  EXPECT_EQ(toolkit_headers_identity_uncached(dir / "b" / "include"), a);  // portable
  write_text(dir / "b" / "include" / "tkhdr.h", "#define TK 2 // edited\n");
  const std::string edited = toolkit_headers_identity_uncached(dir / "b" / "include");
  EXPECT_NE(edited, a);
  write_text(dir / "b" / "include" / "extra.h", "\n");
  EXPECT_NE(toolkit_headers_identity_uncached(dir / "b" / "include"), edited);
  fs::remove(dir / "b" / "include" / "extra.h");
  EXPECT_EQ(toolkit_headers_identity_uncached(dir / "b" / "include"), edited);
  EXPECT_EQ(toolkit_headers_identity_uncached(dir / "missing"), "missing");
  EXPECT_EQ(toolkit_headers_identity_uncached({}), "");
}

TEST(ToolkitHeadersIdentity, IsMemoizedPerFolder) {
  TempDir dir("toolkit-headers-memo");
  make_toolkit(dir / "include");
  const std::string first = toolkit_headers_identity(dir / "include");
  write_text(dir / "include" / "tkhdr.h", "#define TK 2 // edited later in the process\n");
  EXPECT_EQ(toolkit_headers_identity(dir / "include"), first);
}

TEST(ToolkitNames, EachUserHasAFileOnlyTheyMayWriteAndAnotherUsersIsNotRead) {
  TempDir dir("toolkit-names");
  const fs::path file = toolkit_names_file(dir.path(), "00ff");
  EXPECT_EQ(file, dir / ("toolkit-names-00ff-" + std::to_string(::geteuid())));
  const mode_t old = ::umask(0);
  write_toolkit_names(file, "version\nend\n");
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(read_toolkit_names(file), "version\nend\n");
  EXPECT_EQ(read_toolkit_names(dir / "missing"), std::nullopt);
  ::chmod(file.c_str(), 0664);
  EXPECT_EQ(read_toolkit_names(file), std::nullopt);  // the group may have written it
  ::chmod(file.c_str(), 0644);
  if (const std::string why = give_to_another_user(file); !why.empty()) GTEST_SKIP() << why;
  EXPECT_EQ(read_toolkit_names(file), std::nullopt);
}

// Through the scan: the toolkit's cuda/std/version includes <version>, which NVRTC looks up in the
// include paths first. A names file that leaves "version" out, written by another user (or left
// writable by the group), hid a user's inc/version from the key.
TEST(ToolkitNames, AForgedNamesFileOfAnotherUserHidesNoHeaderFromTheScan) {
  for (const bool other_owner : {false, true}) {
    SCOPED_TRACE(other_owner ? "owned by another user" : "writable by the group");
    TempDir dir("toolkit-names-forged");
    const fs::path toolkit = dir / "toolkit" / "include";
    write_text(toolkit / "cuda" / "std" / "version", "#include <version>\n");
    write_text(toolkit / "version", "#pragma once\n");
    write_text(dir / "inc" / "unrelated.h", "\n");  // an empty include path needs no lookups
    IncludeSearch search;
    search.include_paths = {dir / "inc"};
    search.toolkit_dirs = {toolkit};
    const std::string source = "#include <cuda/std/version>\n";
    forget_header_scans();
    (void)scan_includes(source, search, ScanPlace(dir / "names"));  // writes this user's names
    std::vector<fs::path> kept;
    for (const auto& item : fs::directory_iterator(dir / "names")) {
      if (item.path().filename().string().starts_with("toolkit-names-"))
        kept.push_back(item.path());
    }
    ASSERT_EQ(kept.size(), 1u);
    ASSERT_EQ(read_text(kept[0]), "cuda/std/version\nversion\nend\n");
    write_text(kept[0], "cuda/std/version\nend\n");  // the forgery: <version> left out
    ::chmod(kept[0].c_str(), 0644);
    if (other_owner) {
      if (const std::string why = give_to_another_user(kept[0]); !why.empty()) {
        std::cout << "skipped: " << why << "\n";
        continue;
      }
    } else {
      ::chmod(kept[0].c_str(), 0664);
    }
    write_text(dir / "inc" / "version", "#define SHADOW 1\n");
    forget_header_scans();  // a new process
    const HeaderScan after = scan_includes(source, search, ScanPlace(dir / "names"));
    forget_header_scans();
    EXPECT_NE(std::find(after.headers.begin(), after.headers.end(),
                        HeaderDigest{"version", (dir / "inc" / "version").string(), true,
                                     hash128("#define SHADOW 1\n")}),
              after.headers.end());
  }
}

}  // namespace
}  // namespace cubby
