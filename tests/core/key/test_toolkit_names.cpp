// Tests for core/src/key/toolkit_names.cpp: the closure of names the toolkit headers reach,
// memoized per process by its content and kept between processes in each store's names file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "key/include_scan.hpp"
#include "key/toolkit_names.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

// The names files in `folder` (a store's tmp/).
std::vector<fs::path> names_files(const fs::path& folder) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(folder, ec)) {
    if (item.path().filename().string().starts_with("toolkit-names-")) out.push_back(item.path());
  }
  return out;
}

class ToolkitClosure : public ::testing::Test {
 protected:
  void SetUp() override {
    forget_header_scans();
    write_text(toolkit() / "cuda" / "std" / "version", "#include <version>\n");
    write_text(toolkit() / "version", "#pragma once\n");
  }
  void TearDown() override { forget_header_scans(); }

  fs::path toolkit() const { return dir_ / "toolkit" / "include"; }
  std::shared_ptr<const ToolkitNames> closure(const fs::path& folder) const {
    return toolkit_closure({toolkit().string()}, "cuda/std/version", folder);
  }

  TempDir dir_{"toolkit-closure"};
};

TEST_F(ToolkitClosure, IsKeptInTheFolderAndReadThereByTheNextProcess) {
  const auto first = closure(dir_ / "store");
  ASSERT_EQ(first->count("version"), 1u);
  const std::vector<fs::path> files = names_files(dir_ / "store");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(read_text(files[0]), "cuda/std/version\nversion\nend\n");
  forget_header_scans();  // a new process
  const std::uint64_t read = header_files_read();
  EXPECT_EQ(*closure(dir_ / "store"), *first);
  EXPECT_EQ(header_files_read(), read);  // no toolkit header walked again
}

// Two Caches on two stores in one process: the closure is walked once, and each store's folder
// gets its names file, so the next process on either store walks nothing.
TEST_F(ToolkitClosure, EachFolderGetsItsNamesFileWhenTheClosureComesFromTheMemo) {
  const auto first = closure(dir_ / "a");
  const std::uint64_t read = header_files_read();
  const auto second = closure(dir_ / "b");
  EXPECT_EQ(second, first);              // the memo's closure
  EXPECT_EQ(header_files_read(), read);  // not walked again
  const std::vector<fs::path> a = names_files(dir_ / "a");
  const std::vector<fs::path> b = names_files(dir_ / "b");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].filename(), b[0].filename());
  EXPECT_EQ(read_text(b[0]), read_text(a[0]));
  forget_header_scans();  // a new process on store b
  EXPECT_EQ(*closure(dir_ / "b"), *first);
  EXPECT_EQ(header_files_read(), read);
}

// A folder whose names file is already whole is not written again.
TEST_F(ToolkitClosure, AWholeNamesFileInAnotherFolderIsLeftAsItIs) {
  closure(dir_ / "a");
  forget_header_scans();
  closure(dir_ / "b");  // a process that walked for store b only
  const std::vector<fs::path> a = names_files(dir_ / "a");
  ASSERT_EQ(a.size(), 1u);
  struct stat before {};
  ASSERT_EQ(::stat(a[0].c_str(), &before), 0);
  closure(dir_ / "a");  // the memo's closure, store a's file already whole
  struct stat after {};
  ASSERT_EQ(::stat(a[0].c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);  // a rewrite renames a new file over it
}

}  // namespace
}  // namespace cubby
