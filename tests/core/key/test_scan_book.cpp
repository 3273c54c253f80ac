// Tests for core/src/key/scan_book.cpp: the book of whole header scans between processes (its page
// format, a fresh process served from it, every change that must make it scan again, pages another
// user could have written, corrupt and renamed pages, variants of one include set).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "key/include_scan.hpp"
#include "key/record_bytes.hpp"
#include "key/scan_book.hpp"
#include "key/scan_place.hpp"
#include "test_support.hpp"
#include "util/hash.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using cubby::testing::give_to_another_user;
using cubby::testing::read_text;
using cubby::testing::TempDir;
using cubby::testing::write_text;

// Every test keeps its scans in one store's tmp/ with no "too new" margin (the files it writes
// count as old at once) and plays a new process with forget_header_scans() and a new place.
class ScanBookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("CUBBY_SCAN_WATCH");
    forget_header_scans();
    write_text(inc() / "a.h", "#pragma once\n#include \"b.h\"\n");
    write_text(inc() / "b.h", "#pragma once\nint b;\n");
    search_.include_paths = {inc2(), inc()};
    fs::create_directories(inc2());
  }
  void TearDown() override { forget_header_scans(); }

  fs::path inc() const { return dir_.path() / "inc"; }
  fs::path inc2() const { return dir_.path() / "inc2"; }
  fs::path store() const { return dir_.path() / "store" / "tmp"; }
  fs::path pages() const { return ScanPlace(store()).book()->folder(); }

  // `source` scanned in a new process with the store's files (too new: `too_new_ns`).
  HeaderScan fresh(const std::string& source, std::int64_t too_new_ns = 0) {
    forget_header_scans();
    place_ = std::make_unique<ScanPlace>(store(), too_new_ns);
    return scan_includes(source, search_, *place_);
  }
  // `source` scanned with nothing kept between processes and no memo: the truth.
  HeaderScan truth(const std::string& source) {
    forget_header_scans();
    return scan_includes(source, search_);
  }
  std::vector<fs::path> page_files() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& item : fs::directory_iterator(pages(), ec)) out.push_back(item.path());
    return out;
  }
  static bool has(const HeaderScan& scan, const fs::path& file) {
    const std::string path = fs::weakly_canonical(file).string();
    return std::any_of(scan.headers.begin(), scan.headers.end(),
                       [&](const HeaderDigest& d) { return d.resolved && d.path == path; });
  }

  static constexpr const char* kSource = "#include <a.h>\n__global__ void k() {}\n";
  TempDir dir_{"scan-book"};
  IncludeSearch search_;
  std::unique_ptr<ScanPlace> place_;
};

TEST_F(ScanBookTest, AFreshProcessTakesAnIncludeSetsScanFromTheBookReadingNoHeader) {
  const HeaderScan first = fresh(kSource);
  ASSERT_EQ(page_files().size(), 1u);
  const std::uint64_t booked = header_scans_booked();
  const std::uint64_t read = header_files_read();
  const HeaderScan second = fresh(kSource);
  EXPECT_EQ(header_scans_booked(), booked + 1);
  EXPECT_EQ(header_files_read(), read);
  EXPECT_EQ(second.headers, first.headers);
  EXPECT_EQ(second.headers, truth(kSource).headers);
  EXPECT_TRUE(has(second, inc() / "b.h"));
  // Another program with the same includes is served by the same page.
  fresh("#include <a.h>\n__global__ void other(int* p) { *p = b; }\n");
  EXPECT_EQ(header_scans_booked(), booked + 2);
  EXPECT_EQ(page_files().size(), 1u);
}

TEST_F(ScanBookTest, AnEditedHeaderIsScannedAgain) {
  fresh(kSource);
  write_text(inc() / "c.h", "int c;\n");
  write_text(inc() / "b.h", "#pragma once\n#include \"c.h\"\n");
  const std::uint64_t booked = header_scans_booked();
  const HeaderScan after = fresh(kSource);
  EXPECT_EQ(header_scans_booked(), booked);
  EXPECT_TRUE(has(after, inc() / "c.h"));
  EXPECT_EQ(after.headers, truth(kSource).headers);
  fresh(kSource);  // the page was rewritten with the new scan
  EXPECT_EQ(header_scans_booked(), booked + 1);
}

TEST_F(ScanBookTest, AHeaderAppearingEarlierInTheSearchIsFound) {
  fresh(kSource);
  write_text(inc2() / "b.h", "int shadow;\n");  // inc2 is searched before inc
  const std::uint64_t booked = header_scans_booked();
  const HeaderScan after = fresh(kSource);
  EXPECT_EQ(header_scans_booked(), booked);
  EXPECT_TRUE(has(after, inc2() / "b.h"));
  EXPECT_EQ(after.headers, truth(kSource).headers);
}

TEST_F(ScanBookTest, AMissingHeaderThatAppearsIsFound) {
  const std::string source = "#include <a.h>\n#if __has_include(<opt.h>)\n#endif\n";
  EXPECT_FALSE(has(fresh(source), inc() / "opt.h"));
  write_text(inc() / "opt.h", "int opt;\n");
  const std::uint64_t booked = header_scans_booked();
  const HeaderScan after = fresh(source);
  EXPECT_EQ(header_scans_booked(), booked);
  EXPECT_TRUE(has(after, inc() / "opt.h"));
}

TEST_F(ScanBookTest, AnotherFileComingIntoAnIncludeFolderKeepsThePage) {
  fresh(kSource);
  write_text(inc() / "unrelated.txt", "x\n");
  write_text(inc2() / "notes.md", "y\n");
  const std::uint64_t booked = header_scans_booked();
  const HeaderScan after = fresh(kSource);
  EXPECT_EQ(header_scans_booked(), booked + 1);
  EXPECT_EQ(after.headers, truth(kSource).headers);
}

TEST_F(ScanBookTest, AFolderSwappedForAnotherIsScannedAgain) {
  fresh(kSource);
  fs::rename(inc(), dir_.path() / "old-inc");
  write_text(inc() / "a.h", "#pragma once\n#include \"b.h\"\n");  // same names, other files
  write_text(inc() / "b.h", "#pragma once\nint B;\n");
  const std::uint64_t booked = header_scans_booked();
  const HeaderScan after = fresh(kSource);
  EXPECT_EQ(header_scans_booked(), booked);
  EXPECT_EQ(after.headers, truth(kSource).headers);
}

TEST_F(ScanBookTest, AScanOfFilesChangedWithinTheTooNewWindowIsNotBooked) {
  fresh(kSource, ScanRecord::kTooNewNs);  // a.h and b.h were written just now
  EXPECT_TRUE(page_files().empty());
}

TEST_F(ScanBookTest, VariantsOfOneIncludeSetAreKeptApart) {
  write_text(inc() / "x.h", "int x;\n");
  write_text(inc() / "y.h", "int y;\n");
  const std::string source = "#include CONFIG\n";
  search_.defines = {"CONFIG=<x.h>"};
  EXPECT_TRUE(has(fresh(source), inc() / "x.h"));
  search_.defines = {"CONFIG=<y.h>"};
  EXPECT_TRUE(has(fresh(source), inc() / "y.h"));
  ASSERT_EQ(page_files().size(), 1u);  // one include set, two variants
  const std::uint64_t booked = header_scans_booked();
  search_.defines = {"CONFIG=<x.h>"};
  const HeaderScan x = fresh(source);
  search_.defines = {"CONFIG=<y.h>"};
  const HeaderScan y = fresh(source);
  EXPECT_EQ(header_scans_booked(), booked + 2);
  EXPECT_TRUE(has(x, inc() / "x.h"));
  EXPECT_FALSE(has(x, inc() / "y.h"));
  EXPECT_TRUE(has(y, inc() / "y.h"));
  EXPECT_FALSE(has(y, inc() / "x.h"));
}

// A scan the page cannot serve (no page yet, a stale scan, another variant) reads the page file
// once: the new scan is merged into the page as read, every other variant kept.
TEST_F(ScanBookTest, AScanThePageCannotServeReadsThePageOnceAndKeepsEveryVariant) {
  write_text(inc() / "x.h", "int x;\n");
  write_text(inc() / "y.h", "int y;\n");
  const std::string source = "#include CONFIG\n";
  search_.defines = {"CONFIG=<x.h>"};
  fresh(source);  // no page yet
  EXPECT_EQ(place_->book()->pages_read(), 1u);
  search_.defines = {"CONFIG=<y.h>"};
  fresh(source);  // another variant
  EXPECT_EQ(place_->book()->pages_read(), 1u);
  write_text(inc() / "y.h", "int y2;\n");
  fresh(source);  // a stale scan
  EXPECT_EQ(place_->book()->pages_read(), 1u);
  ASSERT_EQ(page_files().size(), 1u);
  const std::uint64_t booked = header_scans_booked();
  for (const char* define : {"CONFIG=<x.h>", "CONFIG=<y.h>"}) {
    search_.defines = {define};
    const HeaderScan served = fresh(source);
    EXPECT_EQ(place_->book()->pages_read(), 1u) << define;
    EXPECT_EQ(served.headers, truth(source).headers) << define;
  }
  EXPECT_EQ(header_scans_booked(), booked + 2);
}

TEST_F(ScanBookTest, APageAnotherUserCouldHaveWrittenIsNotRead) {
  for (const bool other_owner : {false, true}) {
    fresh(kSource);
    const std::vector<fs::path> files = page_files();
    ASSERT_EQ(files.size(), 1u);
    if (other_owner) {
      if (const std::string why = give_to_another_user(files[0]); !why.empty()) {
        std::cout << "skipped: " << why << "\n";
        continue;
      }
    } else {
      ::chmod(files[0].c_str(), 0664);  // writable by the store's group
    }
    const std::uint64_t booked = header_scans_booked();
    const HeaderScan after = fresh(kSource);
    EXPECT_EQ(header_scans_booked(), booked) << "other owner: " << other_owner;
    EXPECT_EQ(after.headers, truth(kSource).headers);
    fs::remove(files[0]);
  }
}

TEST_F(ScanBookTest, ACorruptPageIsNoPageAndIsRewritten) {
  fresh(kSource);
  const std::vector<fs::path> files = page_files();
  ASSERT_EQ(files.size(), 1u);
  std::string bytes = read_text(files[0]);
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    ASSERT_FALSE(decode_book_page(std::string_view(bytes).substr(0, size))) << size;
  }
  ASSERT_TRUE(decode_book_page(bytes));
  EXPECT_FALSE(decode_book_page(bytes + "x"));
  bytes[bytes.size() / 2] ^= 1;
  EXPECT_FALSE(decode_book_page(bytes));
  write_text(files[0], bytes);
  ::chmod(files[0].c_str(), 0644);
  const std::uint64_t booked = header_scans_booked();
  EXPECT_EQ(fresh(kSource).headers, truth(kSource).headers);
  EXPECT_EQ(header_scans_booked(), booked);
  fresh(kSource);
  EXPECT_EQ(header_scans_booked(), booked + 1);
}

TEST_F(ScanBookTest, APageRenamedOverAnotherIncludeSetsNameIsNotThatSetsPage) {
  write_text(inc() / "z.h", "int z;\n");
  const std::string other = "#include <z.h>\n";
  fresh(kSource);
  const fs::path first = page_files().at(0);
  fresh(other);
  ASSERT_EQ(page_files().size(), 2u);
  const std::vector<fs::path> files = page_files();
  const fs::path second = files[0] == first ? files[1] : files[0];
  fs::rename(first, second);  // kSource's page under `other`'s name
  const std::uint64_t booked = header_scans_booked();
  const HeaderScan after = fresh(other);
  EXPECT_EQ(header_scans_booked(), booked);
  EXPECT_TRUE(has(after, inc() / "z.h"));
  EXPECT_FALSE(has(after, inc() / "a.h"));
}

TEST_F(ScanBookTest, AStoreThatCannotBeWrittenScansAsWithoutOne) {
  write_text(dir_.path() / "store", "a file where the store's folder should be");
  EXPECT_EQ(fresh(kSource).headers, truth(kSource).headers);
  EXPECT_EQ(fresh(kSource).headers, truth(kSource).headers);
}

// A page another scanner made (another book version, lexer or cubby release), its checksum right,
// is no page.
TEST(ScanBookPage, AnotherVersionLexerOrReleaseIsRejectedEvenWithAGoodChecksum) {
  BookedScan scan;
  scan.result = std::make_shared<HeaderScan>();
  const std::string good = encode_book_page(BookPage{"key", "toolkit", {scan}});
  ASSERT_TRUE(decode_book_page(good));
  const std::size_t head = std::string_view("cubby scan book\n").size();
  for (const std::size_t at : {head, head + 4, head + 8 + 4}) {  // version, lexer, release's text
    std::string other = good.substr(0, good.size() - 16);
    other[at] = static_cast<char>(other[at] + 1);
    seal_record(other);
    EXPECT_FALSE(decode_book_page(other)) << at;
  }
}

// A scan another process added to the page after this one opened it is kept: the page is read
// again (only then) and the new scan merged into it.
TEST(ScanBookPage, AScanAddedByAnotherProcessSinceOpenIsKept) {
  TempDir dir("scan-book-merge");
  const ScanBook mine(dir.path()), theirs(dir.path());
  const auto booked = [](const char* call) {
    BookedScan scan;
    scan.macros = {"CONFIG"};
    scan.calls = {call};
    auto result = std::make_shared<HeaderScan>();
    result->headers = {HeaderDigest{"a.h", "/inc/a.h", true, hash128(call)}};
    scan.result = result;
    return scan;
  };
  BookPage page = mine.open("key", "toolkit");
  theirs.add(theirs.open("key", "toolkit"), booked("CONFIG <x.h>"));
  mine.add(std::move(page), booked("CONFIG <y.h>"));
  EXPECT_EQ(mine.pages_read(), 2u);  // the second read: the file changed since open
  BookPage after = mine.open("key", "toolkit");
  ASSERT_EQ(after.scans.size(), 2u);
  EXPECT_EQ(after.scans[0].calls, std::vector<std::string>{"CONFIG <y.h>"});
  EXPECT_EQ(after.scans[1].calls, std::vector<std::string>{"CONFIG <x.h>"});
}

TEST(ScanBookPage, EncodesAndDecodesEveryField) {
  BookedScan scan;
  scan.limit_ns = 1'700'000'000'123'456'789;
  scan.macros = {"HAS", "CONFIG"};
  scan.calls = {"HAS <x.h>"};
  ScanWatch::Folder folder;
  folder.path = "/inc";
  folder.is_dir = true;
  folder.st.st_dev = 7;
  folder.st.st_ino = 8;
  folder.st.st_size = 4096;
  folder.st.st_mtim = {1'700'000'000, 5};
  folder.st.st_ctim = {1'700'000'001, 6};
  folder.asked = {{"a.h", true}, {"zz", false}};
  folder.every_name = true;
  scan.looked.folders = {folder, ScanWatch::Folder{"/gone", false, {}, {}, false}};
  ScanWatch::File file{"/inc/a.h", {}};
  file.st.st_ino = 9;
  file.st.st_size = 12;
  scan.looked.files = {file};
  scan.looked.absent = {"/inc2/a.h"};
  auto result = std::make_shared<HeaderScan>();
  result->headers = {HeaderDigest{"a.h", "/inc/a.h", true, hash128("x")},
                     HeaderDigest{"gone.h", "", false, {}}};
  result->unresolvable = {"/inc/a.h:3: #include X: why"};
  scan.result = result;
  const BookPage page{std::string("key\0bytes", 9), "toolkit-id", {scan, scan}};
  const auto decoded = decode_book_page(encode_book_page(page));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->memo_key, page.memo_key);
  EXPECT_EQ(decoded->toolkit, page.toolkit);
  ASSERT_EQ(decoded->scans.size(), 2u);
  const BookedScan& back = decoded->scans[1];
  EXPECT_EQ(back.limit_ns, scan.limit_ns);
  EXPECT_EQ(back.macros, scan.macros);
  EXPECT_EQ(back.calls, scan.calls);
  ASSERT_EQ(back.looked.folders.size(), 2u);
  const ScanWatch::Folder& f = back.looked.folders[0];
  EXPECT_EQ(f.path, "/inc");
  EXPECT_TRUE(f.is_dir);
  EXPECT_TRUE(FileScan::same_state(f.st, folder.st));
  EXPECT_EQ(f.asked, folder.asked);
  EXPECT_TRUE(f.every_name);
  EXPECT_FALSE(back.looked.folders[1].is_dir);
  ASSERT_EQ(back.looked.files.size(), 1u);
  EXPECT_EQ(back.looked.files[0].path, "/inc/a.h");
  EXPECT_TRUE(FileScan::same_state(back.looked.files[0].st, file.st));
  EXPECT_EQ(back.looked.absent, scan.looked.absent);
  EXPECT_EQ(back.result->headers, result->headers);
  EXPECT_EQ(back.result->unresolvable, result->unresolvable);
}

}  // namespace
}  // namespace cubby
