// Tests for core/src/key/scan_record.cpp: the header scan's record between processes (its byte
// format, the "too new" rule, merging, bounds, corrupt and unwritable record files, records another
// user could have written, headers on network file systems).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cubby/cache.hpp"
#include "cubby/nvrtc.hpp"
#include "key/include_scan.hpp"
#include "key/scan_record.hpp"
#include "test_support.hpp"
#include "util/file_trust.hpp"
#include "util/hash.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using cubby::testing::give_to_another_user;
using cubby::testing::read_text;
using cubby::testing::TempDir;
using cubby::testing::write_text;

constexpr std::int64_t kSecond = 1'000'000'000;

// A scan of a file last changed at `changed_ns`, read `age_ns` later.
std::shared_ptr<FileScan> scan_of(std::uint64_t ino, std::int64_t changed_ns, std::int64_t age_ns,
                                  std::string include = "a.cuh") {
  auto scan = std::make_shared<FileScan>();
  scan->dev = 7;
  scan->ino = ino;
  scan->size = 100 + ino;
  scan->mtime_ns = changed_ns;
  scan->ctime_ns = changed_ns;
  scan->read_ns = changed_ns + age_ns;
  scan->content_hash.fill(static_cast<std::uint8_t>(ino));
  scan->includes = {std::move(include), "b/c.h"};
  scan->unresolvable = {"#include M"};
  scan->test_macros = {"HAS"};
  scan->forwards = {"M HAS"};
  scan->calls = {"HAS <x>"};
  return scan;
}

// The stat a file in the state of `scan` would have.
struct stat stat_of(const FileScan& scan) {
  struct stat st {};
  st.st_dev = static_cast<dev_t>(scan.dev);
  st.st_ino = static_cast<ino_t>(scan.ino);
  st.st_size = static_cast<off_t>(scan.size);
  st.st_mtim.tv_sec = scan.mtime_ns / kSecond;
  st.st_mtim.tv_nsec = scan.mtime_ns % kSecond;
  st.st_ctim.tv_sec = scan.ctime_ns / kSecond;
  st.st_ctim.tv_nsec = scan.ctime_ns % kSecond;
  return st;
}

bool same_scan(const FileScan& a, const FileScan& b) {
  return a.dev == b.dev && a.ino == b.ino && a.size == b.size && a.mtime_ns == b.mtime_ns &&
         a.ctime_ns == b.ctime_ns && a.content_hash == b.content_hash && a.includes == b.includes &&
         a.unresolvable == b.unresolvable && a.test_macros == b.test_macros &&
         a.forwards == b.forwards && a.calls == b.calls;
}

const std::int64_t kOld = 1'700'000'000 * kSecond;

// The file system type statfs gives for ext4 and for NFS.
constexpr std::int64_t kExt4 = 0xEF53;
constexpr std::int64_t kNfs = 0x6969;

// A record that takes every header for one on ext4 (the headers of these tests are made up).
ScanRecord local_record(const fs::path& file, std::size_t max_entries = ScanRecord::kMaxEntries) {
  return ScanRecord(file, ScanRecord::kTooNewNs, max_entries,
                    [](const std::string&) -> std::optional<std::int64_t> { return kExt4; });
}

TEST(ScanRecordFormat, EncodesAndDecodesEveryField) {
  const ScanEntries entries = {{"/inc/a.cuh", scan_of(1, kOld, 10 * kSecond)},
                               {"/inc/b/c.h", scan_of(2, kOld, 10 * kSecond, "")}};
  const auto decoded = decode_scan_record(encode_scan_record(entries));
  ASSERT_TRUE(decoded.has_value());
  ASSERT_EQ(decoded->size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*decoded)[i].first, entries[i].first);
    EXPECT_TRUE(same_scan(*(*decoded)[i].second, *entries[i].second));
  }
  EXPECT_TRUE(decode_scan_record(encode_scan_record({})).has_value());
}

TEST(ScanRecordFormat, EveryTruncationFlippedByteOrTrailingByteIsRejected) {
  const std::string bytes = encode_scan_record({{"/inc/a.cuh", scan_of(1, kOld, 10 * kSecond)}});
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    EXPECT_FALSE(decode_scan_record(bytes.substr(0, size)).has_value()) << "truncated to " << size;
  }
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    std::string flipped = bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x20);
    EXPECT_FALSE(decode_scan_record(flipped).has_value()) << "byte " << at << " flipped";
  }
  EXPECT_FALSE(decode_scan_record(bytes + '\0').has_value());
  EXPECT_FALSE(
      decode_scan_record("not a record at all, just some text of some length").has_value());
}

TEST(ScanRecordFormat, AnotherVersionOrLexerVersionIsRejectedEvenWithAGoodChecksum) {
  // A record of another format or lexer version, checksummed as its writer would: its lists may
  // mean something else, so it is ignored (never a wrong key).
  const std::string bytes = encode_scan_record({{"/inc/a.cuh", scan_of(1, kOld, 10 * kSecond)}});
  const std::size_t version_at = std::string_view("cubby scan record\n").size();
  for (const std::size_t at : {version_at, version_at + 4}) {
    std::string other = bytes.substr(0, bytes.size() - 16);
    other[at] = static_cast<char>(other[at] + 1);
    const auto checksum = hash128(other);
    other.append(reinterpret_cast<const char*>(checksum.data()), checksum.size());
    EXPECT_FALSE(decode_scan_record(other).has_value()) << "field at " << at;
  }
}

TEST(ScanRecord, FindsASavedScanOnlyForTheExactFileState) {
  TempDir dir("scan-record");
  const auto scan = scan_of(1, kOld, 10 * kSecond);
  {
    ScanRecord record = local_record(dir / "scan-record");
    record.add("/inc/a.cuh", scan);
    record.save();
  }
  ScanRecord later = local_record(dir / "scan-record");  // another process
  const struct stat st = stat_of(*scan);
  const auto found = later.find("/inc/a.cuh", st);
  ASSERT_NE(found, nullptr);
  EXPECT_TRUE(same_scan(*found, *scan));
  EXPECT_EQ(later.find("/inc/other.cuh", st), nullptr);
  // Any field of the state differs: another file, or this one rewritten (a ctime is enough: an
  // edit of the same size with its mtime set back).
  for (int field = 0; field < 5; ++field) {
    struct stat other = st;
    if (field == 0) other.st_dev += 1;
    if (field == 1) other.st_ino += 1;
    if (field == 2) other.st_size += 1;
    if (field == 3) other.st_mtim.tv_nsec += 1;
    if (field == 4) other.st_ctim.tv_nsec += 1;
    EXPECT_EQ(later.find("/inc/a.cuh", other), nullptr) << "field " << field;
  }
}

TEST(ScanRecord, AFileChangedWithinTheTooNewWindowOrInTheFutureIsNotRecorded) {
  TempDir dir("scan-record");
  const auto recent = scan_of(1, kOld, ScanRecord::kTooNewNs - 1);  // changed 2 s - 1 ns before
  const auto future = scan_of(2, kOld, -kSecond);                   // stamp after the read
  auto ctime_only = scan_of(3, kOld, 10 * kSecond);                 // mtime set back, ctime new
  ctime_only->ctime_ns = ctime_only->read_ns - kSecond;
  auto unknown = scan_of(4, kOld, 10 * kSecond);  // no read time
  unknown->read_ns = 0;
  const auto old = scan_of(5, kOld, ScanRecord::kTooNewNs + 1);
  {
    ScanRecord record = local_record(dir / "scan-record");
    for (const auto& scan : {recent, future, ctime_only, unknown, old}) {
      record.add("/inc/" + std::to_string(scan->ino), scan);
    }
    record.save();
  }
  ScanRecord later = local_record(dir / "scan-record");
  for (const auto& scan : {recent, future, ctime_only, unknown}) {
    EXPECT_EQ(later.find("/inc/" + std::to_string(scan->ino), stat_of(*scan)), nullptr)
        << "ino " << scan->ino;
  }
  EXPECT_NE(later.find("/inc/5", stat_of(*old)), nullptr);
}

TEST(ScanRecord, NothingTooNewAddedWritesNoFile) {
  TempDir dir("scan-record");
  ScanRecord record = local_record(dir / "scan-record");
  record.add("/inc/a.cuh", scan_of(1, kOld, 0));
  record.save();
  EXPECT_FALSE(fs::exists(dir / "scan-record"));
}

TEST(ScanRecord, ACorruptTruncatedOrForeignRecordFileIsIgnoredAndRewritten) {
  TempDir dir("scan-record");
  const auto scan = scan_of(1, kOld, 10 * kSecond);
  const std::string good = encode_scan_record({{"/inc/a.cuh", scan}});
  std::string wrong_hash = good;  // the content hash's first byte, checksum left as it was
  wrong_hash[good.find("/inc/a.cuh") + 10 + 40] ^= 1;
  for (const std::string& bad :
       {good.substr(0, good.size() - 1), wrong_hash, std::string("garbage"), std::string()}) {
    write_text(dir / "scan-record", bad);
    ScanRecord record = local_record(dir / "scan-record");
    EXPECT_EQ(record.find("/inc/a.cuh", stat_of(*scan)), nullptr);
    record.add("/inc/b.cuh", scan_of(2, kOld, 10 * kSecond));
    record.save();
    auto bytes = io::read_file(dir / "scan-record");
    ASSERT_TRUE(bytes.ok());
    const auto decoded = decode_scan_record(*bytes);
    ASSERT_TRUE(decoded.has_value());
    ASSERT_EQ(decoded->size(), 1u);
    EXPECT_EQ(decoded->front().first, "/inc/b.cuh");
  }
}

TEST(ScanRecord, AnUnwritableFolderCostsNothingButTheRecord) {
  TempDir dir("scan-record");
  write_text(dir / "file", "a regular file where the folder should be");
  ScanRecord record = local_record(dir / "file" / "scan-record");
  const auto scan = scan_of(1, kOld, 10 * kSecond);
  record.add("/inc/a.cuh", scan);
  record.save();                                                  // fails quietly
  EXPECT_NE(record.find("/inc/a.cuh", stat_of(*scan)), nullptr);  // still known in the process
}

TEST(ScanRecord, SavesMergeWithOtherProcessesAndStayBounded) {
  TempDir dir("scan-record");
  {
    ScanRecord first = local_record(dir / "scan-record");
    first.add("/inc/1", scan_of(1, kOld, 10 * kSecond));
    first.save();
  }
  {
    ScanRecord second = local_record(dir / "scan-record");
    second.add("/inc/2", scan_of(2, kOld, 10 * kSecond));
    second.save();
  }
  ScanRecord merged = local_record(dir / "scan-record");
  EXPECT_NE(merged.find("/inc/1", stat_of(*scan_of(1, kOld, 10 * kSecond))), nullptr);
  EXPECT_NE(merged.find("/inc/2", stat_of(*scan_of(2, kOld, 10 * kSecond))), nullptr);

  // At most max_entries: this process's first, then the file's.
  ScanRecord small = local_record(dir / "scan-record", 3);
  for (std::uint64_t ino = 10; ino < 15; ++ino) {
    small.add("/inc/" + std::to_string(ino), scan_of(ino, kOld, 10 * kSecond));
  }
  small.save();
  const auto decoded = decode_scan_record(*io::read_file(dir / "scan-record"));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->size(), 3u);
  for (const auto& [path, scan] : *decoded) EXPECT_GE(scan->ino, 10u) << path;
}

TEST(ScanRecord, ConcurrentWritersNeverLeaveATornRecord) {
  TempDir dir("scan-record");
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    while (!done.load()) {
      if (auto bytes = io::read_file(dir / "scan-record")) {
        ++reads;
        if (!decode_scan_record(*bytes).has_value()) ++torn;
      }
    }
  });
  std::vector<std::thread> writers;
  for (std::uint64_t w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      for (std::uint64_t i = 0; i < 20; ++i) {
        ScanRecord record = local_record(dir / "scan-record");  // a process of its own
        for (std::uint64_t n = 0; n < 20; ++n) {
          const std::uint64_t ino = 1 + w * 100000 + i * 100 + n;
          record.add("/inc/" + std::to_string(ino), scan_of(ino, kOld, 10 * kSecond));
        }
        record.save();
      }
    });
  }
  for (auto& writer : writers) writer.join();
  done = true;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(torn.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_TRUE(decode_scan_record(*io::read_file(dir / "scan-record")).has_value());
}

// ---------------------------------------------------------------------------------------------
// Issue 34 item 3: a record another user could have written is never read.
// ---------------------------------------------------------------------------------------------

// How a test makes a record file one that another member of the store's group may have written;
// "" when done, else why it cannot be (GTEST_SKIP).
struct Forgery {
  const char* name;
  std::string (*apply)(const fs::path& file);
};
const Forgery kForgeries[] = {
    {"writable by the group",
     [](const fs::path& file) {
       ::chmod(file.c_str(), 0664);
       return std::string();
     }},
    {"owned by another user", [](const fs::path& file) { return give_to_another_user(file); }},
};

TEST(ScanRecordTrust, EachUserHasARecordFileOnlyTheyMayWrite) {
  TempDir dir("scan-record");
  const fs::path file = scan_record_file(dir.path());
  EXPECT_EQ(file, dir / ("scan-record-" + std::to_string(::geteuid())));
  const mode_t old = ::umask(0);  // a umask that would leave it writable by everyone
  {
    ScanRecord record = local_record(file);
    record.add("/inc/a.cuh", scan_of(1, kOld, 10 * kSecond));
    record.save();
  }
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_TRUE(io::written_only_by_me(st, false));
}

TEST(ScanRecordTrust, ARecordAnotherUserCouldHaveWrittenIsNeitherReadNorMerged) {
  for (const Forgery& forgery : kForgeries) {
    SCOPED_TRACE(forgery.name);
    TempDir dir("scan-record");
    const fs::path file = dir / "scan-record";
    const auto scan = scan_of(1, kOld, 10 * kSecond);
    write_text(file, encode_scan_record({{"/inc/a.cuh", scan}}));  // a valid checksum
    ::chmod(file.c_str(), 0644);
    ASSERT_NE(local_record(file).find("/inc/a.cuh", stat_of(*scan)), nullptr);  // mine: read
    if (const std::string why = forgery.apply(file); !why.empty()) {
      std::cout << "skipped: " << why << "\n";
      continue;
    }
    ScanRecord record = local_record(file);
    EXPECT_EQ(record.find("/inc/a.cuh", stat_of(*scan)), nullptr);
    // Its entries are not merged into this user's record either (a save replaces the file).
    record.add("/inc/b.cuh", scan_of(2, kOld, 10 * kSecond));
    record.save();
    auto saved = io::read_own_file(file, ScanRecord::kMaxBytes);
    ASSERT_TRUE(saved.ok()) << saved.error().message;
    const auto decoded = decode_scan_record(*saved);
    ASSERT_TRUE(decoded.has_value());
    ASSERT_EQ(decoded->size(), 1u);
    EXPECT_EQ(decoded->front().first, "/inc/b.cuh");
  }
}

// The attack end to end, through the cache and NVRTC: a.cuh includes b.cuh; the forged record says
// a.cuh (in its present state) includes nothing. A victim who trusted it keyed the program by a.cuh
// alone, so after editing b.cuh it got the kernel of the old b.cuh from the store.
TEST(ScanRecordTrust, AForgedRecordOfAnotherUserNeverServesAStaleKernel) {
  for (const Forgery& forgery : kForgeries) {
    SCOPED_TRACE(forgery.name);
    TempDir dir("scan-record-forged");
    const fs::path headers = dir / "headers";
    write_text(headers / "a.cuh", "#include \"b.cuh\"\n");
    write_text(headers / "b.cuh", "constexpr int V = 1001;\n");
    const std::string a = fs::canonical(headers / "a.cuh").string();
    struct stat st {};
    ASSERT_EQ(::stat(a.c_str(), &st), 0);
    auto lie = std::make_shared<FileScan>();
    lie->dev = static_cast<std::uint64_t>(st.st_dev);
    lie->ino = static_cast<std::uint64_t>(st.st_ino);
    lie->size = static_cast<std::uint64_t>(st.st_size);
    lie->mtime_ns = FileScan::mtime_of(st);
    lie->ctime_ns = FileScan::ctime_of(st);
    lie->content_hash = hash128(read_text(a));  // includes: none
    Config config;
    config.dir = dir / "store";
    const fs::path record = scan_record_file(config.dir / "tmp");
    write_text(record, encode_scan_record({{a, lie}}));
    ::chmod(record.c_str(), 0644);
    if (const std::string why = forgery.apply(record); !why.empty()) {
      std::cout << "skipped: " << why << "\n";
      continue;
    }
    CompileRequest request;
    request.source = "#include \"a.cuh\"\nextern \"C\" __global__ void k(int* p) { *p = V; }\n";
    request.program_name = (headers / "k.cu").string();
    request.arch = "compute_90";  // PTX: no GPU needed
    forget_header_scans();        // a new process
    {
      Cache cache(config);
      const std::string first = cache.compile(request).entry->payload;
      ASSERT_NE(first.find("1001"), std::string::npos) << first;
    }
    write_text(headers / "b.cuh", "constexpr int V = 2002;\n");
    forget_header_scans();  // another new process
    Cache cache(config);
    const CacheResult second = cache.compile(request);
    EXPECT_NE(second.entry->payload.find("2002"), std::string::npos) << second.entry->payload;
    EXPECT_EQ(second.tier, Source::compiled);
    forget_header_scans();
  }
}

// ---------------------------------------------------------------------------------------------
// Headers on network file systems: like the per-process scan memo (scan_watch.hpp), the record
// neither answers nor records them (NFS's attribute cache can hide another host's edit).
// ---------------------------------------------------------------------------------------------

TEST(ScanRecordNetwork, AHeaderOnANetworkFileSystemIsNeitherAnsweredNorRecorded) {
  TempDir dir("scan-record");
  const auto scan = scan_of(1, kOld, 10 * kSecond);
  {
    ScanRecord record = local_record(dir / "scan-record");
    record.add("/inc/a.cuh", scan);
    record.save();
  }
  ASSERT_NE(local_record(dir / "scan-record").find("/inc/a.cuh", stat_of(*scan)), nullptr);
  for (const FileSystemTypeOf remote :
       {+[](const std::string&) -> std::optional<std::int64_t> { return kNfs; },
        +[](const std::string&) -> std::optional<std::int64_t> { return 0xFF534D42; },  // CIFS
        +[](const std::string&) -> std::optional<std::int64_t> { return std::nullopt; }}) {
    ScanRecord record(dir / "scan-record", ScanRecord::kTooNewNs, ScanRecord::kMaxEntries, remote);
    EXPECT_EQ(record.find("/inc/a.cuh", stat_of(*scan)), nullptr);
    record.add("/inc/b.cuh", scan_of(2, kOld, 10 * kSecond));
    record.save();  // nothing recorded: nothing written
    ScanRecord later = local_record(dir / "scan-record");
    EXPECT_EQ(later.find("/inc/b.cuh", stat_of(*scan_of(2, kOld, 10 * kSecond))), nullptr);
  }
}

TEST(ScanRecordNetwork, TheFileSystemIsAskedOncePerDevice) {
  static std::atomic<int> asked{0};
  asked = 0;
  TempDir dir("scan-record");
  ScanRecord record(dir / "scan-record", ScanRecord::kTooNewNs, ScanRecord::kMaxEntries,
                    [](const std::string&) -> std::optional<std::int64_t> {
                      ++asked;
                      return kExt4;
                    });
  for (std::uint64_t ino = 1; ino <= 3; ++ino) {
    record.add("/inc/" + std::to_string(ino), scan_of(ino, kOld, 10 * kSecond));  // all on dev 7
  }
  EXPECT_EQ(asked.load(), 1);
  EXPECT_NE(record.find("/inc/2", stat_of(*scan_of(2, kOld, 10 * kSecond))), nullptr);
  EXPECT_EQ(asked.load(), 1);
}

}  // namespace
}  // namespace cubby
