// Tests for core/src/key/scan_watch.cpp: whole header scans memoized per process while inotify
// reports no change, and every way a header can change under a memoized scan.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "key/include_scan.hpp"
#include "key/scan_place.hpp"
#include "key/scan_record.hpp"
#include "key/scan_watch.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using cubby::testing::TempDir;
using cubby::testing::write_text;

// Every test scans with no "too new" margin (files written by the test are memoized at once) and
// starts from an empty memo.
class ScanWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("CUBBY_SCAN_WATCH");
    forget_header_scans();
  }
  void TearDown() override {
    ::unsetenv("CUBBY_SCAN_WATCH");
    forget_header_scans();
  }

  HeaderScan scan(const std::string& source, std::vector<fs::path> include_paths) {
    IncludeSearch search;
    search.include_paths = std::move(include_paths);
    return scan_includes(source, search, *place_);
  }

  // The content hash the scan has for the file it found at `path` (fails the test if none).
  static std::array<std::uint8_t, 16> hash_of(const HeaderScan& found, const fs::path& path) {
    const std::string canonical = fs::weakly_canonical(path).string();
    for (const HeaderDigest& digest : found.headers) {
      if (digest.resolved && digest.path == canonical) return digest.content_hash;
    }
    ADD_FAILURE() << canonical << " not in the scan";
    return {};
  }
  static bool has_path(const HeaderScan& found, const fs::path& path) {
    const std::string canonical = fs::weakly_canonical(path).string();
    return std::any_of(found.headers.begin(), found.headers.end(),
                       [&](const HeaderDigest& d) { return d.resolved && d.path == canonical; });
  }

  TempDir dir_{"scan-watch"};
  fs::path inc_ = dir_.path() / "inc";
  // No "too new" margin, nothing kept between processes.
  std::unique_ptr<ScanPlace> place_ = std::make_unique<ScanPlace>(fs::path(), 0);
};

// A computed include's scan depends on the definitions of the names its expansion looked at:
// a source (or a -D option) defining one of them is another scan; defining any other name is not.
TEST_F(ScanWatchTest, ASourceDefiningANameAComputedIncludeLooksAtGetsItsOwnScan) {
  write_text(inc_ / "pick.h", "#include CONFIG\n");
  write_text(inc_ / "a.h", "");
  write_text(inc_ / "b.h", "");
  const std::string body = "#include <pick.h>\n__global__ void k() {}\n";
  const HeaderScan a = scan("#define CONFIG <a.h>\n" + body, {inc_});
  EXPECT_TRUE(has_path(a, inc_ / "a.h"));
  const std::uint64_t served = header_scans_memoized();
  const HeaderScan unrelated = scan("#define CONFIG <a.h>\n#define OTHER 1\n" + body, {inc_});
  EXPECT_EQ(header_scans_memoized(), served + 1);
  EXPECT_EQ(unrelated.headers, a.headers);
  const HeaderScan b = scan("#define CONFIG <b.h>\n" + body, {inc_});
  EXPECT_EQ(header_scans_memoized(), served + 1);
  EXPECT_TRUE(has_path(b, inc_ / "b.h"));
  EXPECT_FALSE(has_path(b, inc_ / "a.h"));
  IncludeSearch search;
  search.include_paths = {inc_};
  search.defines = {"CONFIG=<b.h>"};
  const HeaderScan by_option = scan_includes(body, search, *place_);
  EXPECT_TRUE(has_path(by_option, inc_ / "b.h"));
  EXPECT_FALSE(has_path(by_option, inc_ / "a.h"));
}

TEST_F(ScanWatchTest, ProgramsWithTheSameIncludesShareOneScanUntilAHeaderChanges) {
  write_text(inc_ / "a.h", "#include \"b.h\"\n");
  write_text(inc_ / "b.h", "int b;\n");
  const HeaderScan first = scan("#include <a.h>\nint one;\n", {inc_});
  const std::uint64_t served = header_scans_memoized();
  const std::uint64_t read = header_files_read();
  const HeaderScan second = scan("#include <a.h>\n__global__ void two() {}\n", {inc_});
  EXPECT_EQ(header_scans_memoized(), served + 1);
  EXPECT_EQ(header_files_read(), read) << "a memoized scan reads no header";
  EXPECT_EQ(second.headers, first.headers);
  // Other includes or another search are other scans.
  scan("#include <b.h>\n", {inc_});
  scan("#include <a.h>\n", {inc_, dir_.path()});
  EXPECT_EQ(header_scans_memoized(), served + 1);
}

// A scan depends on the names it asked of a folder, not on the whole folder: other files that
// come and go there (a build's outputs, a test's temporary files) keep the memo; a header of an
// asked name appearing there does not.
TEST_F(ScanWatchTest, OtherFilesComingAndGoingInAnIncludeFolderKeepTheMemo) {
  const fs::path early = dir_.path() / "early";
  fs::create_directories(early);
  write_text(early / "unrelated.h", "int u;\n");
  write_text(inc_ / "a.h", "#include \"b.h\"\n");
  write_text(inc_ / "b.h", "int b;\n");
  const std::string source = "#include <a.h>\n";
  const HeaderScan first = scan(source, {early, inc_});
  const std::uint64_t served = header_scans_memoized();
  write_text(early / "output.o", "x");
  write_text(inc_ / "notes.txt", "x");
  fs::remove(early / "output.o");
  fs::rename(inc_ / "notes.txt", inc_ / "notes.old");
  const HeaderScan again = scan(source, {early, inc_});
  EXPECT_EQ(header_scans_memoized(), served + 1);
  EXPECT_EQ(again.headers, first.headers);
  write_text(early / "b.h", "int shadow;\n");  // an asked name, in an earlier folder
  const HeaderScan shadowed = scan(source, {early, inc_});
  EXPECT_EQ(header_scans_memoized(), served + 1);
  EXPECT_TRUE(has_path(shadowed, early / "b.h"));
}

// A program that passes other names to an include-test macro of its headers reads other files;
// one that differs only in calls of other functions shares the scan.
TEST_F(ScanWatchTest, OnlyCallsOfTheScansIncludeTestMacrosTellProgramsApart) {
  write_text(inc_ / "t.h", "#define HAS(X) __has_include(X)\n");
  write_text(inc_ / "x.h", "int x;\n");
  write_text(inc_ / "y.h", "int y;\n");
  const auto program = [](const std::string& tested, const std::string& code) {
    return "#include <t.h>\n#if HAS(<" + tested + ">)\n#endif\nvoid f() { " + code + "; }\n";
  };
  const HeaderScan x = scan(program("x.h", "g(1)"), {inc_});
  EXPECT_TRUE(has_path(x, inc_ / "x.h"));
  const std::uint64_t served = header_scans_memoized();
  const HeaderScan y = scan(program("y.h", "g(1)"), {inc_});
  EXPECT_TRUE(has_path(y, inc_ / "y.h"));
  EXPECT_FALSE(has_path(y, inc_ / "x.h"));
  EXPECT_EQ(header_scans_memoized(), served);
  const HeaderScan y_again = scan(program("y.h", "h(2, 3)"), {inc_});
  EXPECT_EQ(header_scans_memoized(), served + 1);
  EXPECT_EQ(y_again.headers, y.headers);
}

TEST_F(ScanWatchTest, AHeaderEditedInPlaceIsSeenByTheNextScanAtOnce) {
  write_text(inc_ / "a.h", "#include \"b.h\"\n");
  write_text(inc_ / "b.h", "int b;\n");
  const auto before = hash_of(scan("#include <a.h>\n", {inc_}), inc_ / "b.h");
  scan("#include <a.h>\n", {inc_});
  const std::uint64_t served = header_scans_memoized();
  write_text(inc_ / "b.h", "int c;\n");  // same size, no pause
  const HeaderScan after = scan("#include <a.h>\n", {inc_});
  EXPECT_NE(hash_of(after, inc_ / "b.h"), before);
  EXPECT_EQ(header_scans_memoized(), served);
}

TEST_F(ScanWatchTest, AHeaderCreatedInAnEarlierFolderOrUnderAFolderThatDidNotExistIsSeen) {
  const fs::path early = dir_.path() / "early";
  fs::create_directories(early);
  write_text(inc_ / "a.h", "#include <sub/deep/x.h>\n");
  write_text(inc_ / "sub/deep/x.h", "int x;\n");
  const std::string source = "#include <a.h>\n";
  scan(source, {early, inc_});
  ASSERT_FALSE(has_path(scan(source, {early, inc_}), early / "a.h"));
  write_text(early / "a.h", "int shadow;\n");
  EXPECT_TRUE(has_path(scan(source, {early, inc_}), early / "a.h"));
  scan(source, {early, inc_});
  write_text(early / "sub/deep/x.h", "int shadow_x;\n");  // creates sub/ and sub/deep/ too
  EXPECT_TRUE(has_path(scan(source, {early, inc_}), early / "sub/deep/x.h"));
}

TEST_F(ScanWatchTest, ARetargetedSymlinkOrARenamedFolderAboveIsSeen) {
  write_text(dir_.path() / "v1/b.h", "int v1;\n");
  write_text(dir_.path() / "v2/b.h", "int v2_;\n");
  const fs::path link = dir_.path() / "current";
  fs::create_directory_symlink(dir_.path() / "v1", link);
  const std::string source = "#include <b.h>\n";
  const auto v1 = hash_of(scan(source, {link}), dir_.path() / "v1/b.h");
  scan(source, {link});
  fs::remove(link);
  fs::create_directory_symlink(dir_.path() / "v2", link);
  EXPECT_NE(hash_of(scan(source, {link}), dir_.path() / "v2/b.h"), v1);

  // A folder above the include folder swapped for another one.
  write_text(dir_.path() / "top/inc/b.h", "int top1;\n");
  write_text(dir_.path() / "other/inc/b.h", "int top2;\n");
  const fs::path inc = dir_.path() / "top/inc";
  const auto top1 = hash_of(scan(source, {inc}), inc / "b.h");
  scan(source, {inc});
  fs::rename(dir_.path() / "top", dir_.path() / "old-top");
  fs::rename(dir_.path() / "other", dir_.path() / "top");
  EXPECT_NE(hash_of(scan(source, {inc}), inc / "b.h"), top1);
}

TEST_F(ScanWatchTest, AnEditThroughAHardLinkElsewhereAndADeletedHeaderAreSeen) {
  write_text(inc_ / "b.h", "int b;\n");
  const fs::path other = dir_.path() / "elsewhere" / "b-link.h";
  fs::create_directories(other.parent_path());
  fs::create_hard_link(inc_ / "b.h", other);
  const std::string source = "#include <b.h>\n";
  const auto before = hash_of(scan(source, {inc_}), inc_ / "b.h");
  scan(source, {inc_});
  write_text(other, "int z;\n");  // truncates and writes the same inode
  EXPECT_NE(hash_of(scan(source, {inc_}), inc_ / "b.h"), before);
  scan(source, {inc_});
  fs::remove(inc_ / "b.h");
  EXPECT_FALSE(has_path(scan(source, {inc_}), inc_ / "b.h"));
}

// A child after fork() must not read the notification queue it shares with its parent: the
// parent would lose the event of an edit the child drained.
TEST_F(ScanWatchTest, AChildProcessNeverReadsItsParentsNotifications) {
  write_text(inc_ / "b.h", "int b;\n");
  const std::string source = "#include <b.h>\n";
  const auto before = hash_of(scan(source, {inc_}), inc_ / "b.h");
  scan(source, {inc_});
  write_text(inc_ / "b.h", "int c;\n");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const HeaderScan seen = scan(source, {inc_});
    bool changed = true;
    for (const HeaderDigest& digest : seen.headers) {
      if (digest.resolved && digest.content_hash == before) changed = false;
    }
    ::_exit(changed ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child saw the old header";
  EXPECT_NE(hash_of(scan(source, {inc_}), inc_ / "b.h"), before) << "the parent saw the old header";
}

TEST_F(ScanWatchTest, NothingIsMemoizedWhenTurnedOffOrWhileFilesAreTooNew) {
  write_text(inc_ / "b.h", "int b;\n");
  const std::string source = "#include <b.h>\n";
  ::setenv("CUBBY_SCAN_WATCH", "0", 1);
  const std::uint64_t served = header_scans_memoized();
  scan(source, {inc_});
  scan(source, {inc_});
  EXPECT_EQ(header_scans_memoized(), served);
  ::unsetenv("CUBBY_SCAN_WATCH");
  place_ = std::make_unique<ScanPlace>(fs::path(), ScanRecord::kTooNewNs);  // b.h: within 2 s
  scan(source, {inc_});
  scan(source, {inc_});
  EXPECT_EQ(header_scans_memoized(), served);
  place_ = std::make_unique<ScanPlace>(fs::path(), 0);
  scan(source, {inc_});
  scan(source, {inc_});
  EXPECT_EQ(header_scans_memoized(), served + 1);
}

}  // namespace
}  // namespace cubby
