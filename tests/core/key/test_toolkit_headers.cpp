// Tests for core/src/key/toolkit_headers.cpp: the toolkit header folder's identity, which the
// key holds because CCCL and other toolkit headers ship apart from libnvrtc (issue 23).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "key/toolkit_headers.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
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

}  // namespace
}  // namespace cubby
