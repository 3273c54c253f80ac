// Tests for core/src/key/folder_fingerprint.cpp: the fingerprint of a folder tree (the key's
// fallback for a computed include the scan cannot bound).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "key/folder_fingerprint.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using cubby::testing::TempDir;
using cubby::testing::write_text;

TEST(FingerprintFolderTree, AnyEditAdditionOrRenameChangesItAndACopyElsewhereAgrees) {
  TempDir dir("fingerprint");
  const fs::path tree = dir.path() / "tree";
  write_text(tree / "a.h", "int a;\n");
  write_text(tree / "sub" / "b.h", "int b;\n");
  const FolderTreeFingerprint first = fingerprint_folder_tree(tree.string());
  ASSERT_TRUE(first.ok) << first.why;
  EXPECT_EQ(first.files, 2u);
  fs::copy(tree, dir.path() / "copy", fs::copy_options::recursive);
  EXPECT_EQ(fingerprint_folder_tree((dir.path() / "copy").string()).hash, first.hash);
  write_text(tree / "sub" / "b.h", "int c;\n");  // same size, other bytes
  const FolderTreeFingerprint edited = fingerprint_folder_tree(tree.string());
  EXPECT_NE(edited.hash, first.hash);
  fs::rename(tree / "sub" / "b.h", tree / "sub" / "c.h");
  EXPECT_NE(fingerprint_folder_tree(tree.string()).hash, edited.hash);
  write_text(tree / "new.h", "");
  EXPECT_EQ(fingerprint_folder_tree(tree.string()).files, 3u);
}

TEST(FingerprintFolderTree, ATreeOverTheBoundIsNotFingerprintedAndSaysWhichBound) {
  TempDir dir("fingerprint-bound");
  for (int i = 0; i < 4; ++i) write_text(dir.path() / (std::to_string(i) + ".h"), "x");
  FolderTreeLimits limits;
  limits.max_files = 3;
  const FolderTreeFingerprint files = fingerprint_folder_tree(dir.path().string(), limits);
  EXPECT_FALSE(files.ok);
  EXPECT_NE(files.why.find("more than 3 files"), std::string::npos) << files.why;
  limits.max_files = 10;
  limits.max_bytes = 2;
  EXPECT_FALSE(fingerprint_folder_tree(dir.path().string(), limits).ok);
  EXPECT_TRUE(fingerprint_folder_tree((dir.path() / "missing").string()).ok);
}

}  // namespace
}  // namespace cubby
