// The header scan's record of the files it read, kept in the store between processes (ccache's
// "direct mode" for the scan): a fresh process stats a header instead of reading, lexing and
// hashing it again.
#pragma once

#include <sys/stat.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace cubby {

// What one header file contributes to a scan: its content hash and what list_includes found in
// it (include_lexer.hpp), valid while the file's identity (device, inode), size, mtime and ctime
// (nanoseconds) are unchanged. `read_ns`: CLOCK_REALTIME nanoseconds taken before the file was
// opened (0: unknown); not part of the record's file.
struct FileScan {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::array<std::uint8_t, 16> content_hash{};
  std::vector<std::string> includes;      // list_includes(content).names
  std::vector<std::string> unresolvable;  // list_includes(content).unresolvable
  std::vector<std::string> test_macros;   // list_includes(content).test_macros
  std::vector<std::string> forwards;      // list_includes(content).forwards
  std::vector<std::string> calls;         // list_includes(content).calls
  std::vector<std::string> defines;       // list_includes(content).defines
  std::vector<std::string> computed;      // list_includes(content).computed
  std::int64_t read_ns = 0;

  bool lists_anything() const {
    return !includes.empty() || !unresolvable.empty() || !test_macros.empty() ||
           !forwards.empty() || !calls.empty() || !defines.empty() || !computed.empty();
  }
  // Whether `st` (a stat of the file) shows the state this scan was taken in.
  bool matches(const struct stat& st) const {
    return dev == static_cast<std::uint64_t>(st.st_dev) &&
           ino == static_cast<std::uint64_t>(st.st_ino) &&
           size == static_cast<std::uint64_t>(st.st_size) && mtime_ns == mtime_of(st) &&
           ctime_ns == ctime_of(st);
  }
  // Whether two stats show one file in one state: device, inode, size, mtime and ctime.
  static bool same_state(const struct stat& a, const struct stat& b) {
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
           mtime_of(a) == mtime_of(b) && ctime_of(a) == ctime_of(b);
  }
  // Whether `st`'s mtime and ctime are both before `limit_ns` (the "too new" rule's test).
  static bool changed_before(const struct stat& st, std::int64_t limit_ns) {
    return mtime_of(st) < limit_ns && ctime_of(st) < limit_ns;
  }
  static std::int64_t mtime_of(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  }
  static std::int64_t ctime_of(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  }
};

// CLOCK_REALTIME in nanoseconds: the clock file time stamps are taken from (Linux 6.13+
// multigrain stamps are finer than time(2), which may lag them by most of a second).
std::int64_t realtime_ns();

// The record file's bytes:
//   record  := magic version lexer count:u32 entry* checksum
//   magic   := "cubby scan record\n" (18 bytes)
//   version := u32 (kScanRecordVersion)     lexer := u32 (kIncludeLexerVersion, include_lexer.hpp)
//   entry   := path:str dev:u64 ino:u64 size:u64 mtime_ns:i64 ctime_ns:i64 hash:16 bytes
//              list{7}                       (includes, unresolvable, test_macros, forwards, calls,
//                                             defines, computed)
//   list    := count:u32 str*                str := length:u32 bytes
//   checksum:= hash128 of everything before it (16 bytes)
// Integers little-endian. Paths are canonical (realpath) and unique within a record.
inline constexpr std::uint32_t kScanRecordVersion = 2;
// The record's file in `folder` (a ScanPlace's, scan_place.hpp: a store's tmp/): one
// per user, "scan-record-<effective uid>", so users of a group-shared store never read each
// other's record (nor fight over one file).
std::filesystem::path scan_record_file(const std::filesystem::path& folder);

// The file system type (statfs f_type) of the file at `path`; nullopt when it cannot be told.
std::optional<std::int64_t> file_system_type(const std::string& path);
using FileSystemTypeOf = std::optional<std::int64_t> (*)(const std::string& path);

using ScanEntries = std::vector<std::pair<std::string, std::shared_ptr<const FileScan>>>;

std::string encode_scan_record(const ScanEntries& entries);
// The entries of `bytes`; nullopt for anything but a whole, intact record of this version and
// lexer (bad magic, other version, truncation, trailing bytes, bad checksum).
std::optional<ScanEntries> decode_scan_record(std::string_view bytes);

// One store's record (the file `file`, usually scan_record_file(<store>/tmp)), shared by the
// threads of a process. Contract:
// - `find` answers only for a file whose stat matches the recorded state exactly; the record is
//   read once, on the first `find`, and a record file that is missing, unreadable or fails
//   decode_scan_record counts as empty (it is rewritten by the next `save`): never a wrong scan.
// - Only a record this process's user alone can have written is read (io::read_own_file: a
//   regular file of the effective uid, writable by neither its group nor others, judged on the
//   open file): its checksum is a plain hash anyone can recompute, so another member of the
//   store's group could otherwise make a header "include nothing" and a later edit of what it
//   really includes keep an old key. Another's file counts as empty, at load and at the merge of
//   `save` (so it is never laundered into this user's record). Written mode 0644.
// - Only headers on file systems whose stats prove a file unchanged (stat_trusted of
//   `fs_type_of(path)`, file_system_trust.hpp, per device; as the per-process scan memo) are
//   answered or recorded: NFS's attribute cache (3-60 s) can show an old size and mtime after an
//   edit made on another host, and a SquashFS image rebuilt and mounted again keeps every stat
//   field. A file whose type cannot be told counts as untrusted.
// - `add` keeps a scan only if it was taken from a file whose mtime and ctime are more than
//   `too_new_ns` before the scan's `read_ns` (ccache's "too new" rule: a file may change again
//   within one time stamp granule of the file system, keeping its size and time stamps; a stamp
//   in the future is too new too). Others are left to the per-process memo.
// - `save` writes the record if `add` kept something since the last save: the entries this
//   process used or added, then those of the file on disk now (another process's, merged; last
//   writer wins), at most `max_entries`, written to a temp file and renamed over `file` (readers
//   never see a torn record). A failed write (read-only store) costs time only and is not
//   reported.
class ScanRecord {
 public:
  static constexpr std::int64_t kTooNewNs = 2'000'000'000;  // FAT's 2 s granule
  static constexpr std::size_t kMaxEntries = 20'000;        // ~6 MB for CuPy-like headers
  static constexpr std::uint64_t kMaxBytes = 64u << 20;     // a larger file is not read

  // `fs_type_of`: how a header's file system type is told (tests inject one; the default statfs).
  explicit ScanRecord(std::filesystem::path file, std::int64_t too_new_ns = kTooNewNs,
                      std::size_t max_entries = kMaxEntries,
                      FileSystemTypeOf fs_type_of = file_system_type);

  const std::filesystem::path& file() const { return file_; }
  std::int64_t too_new_ns() const { return too_new_ns_; }
  std::shared_ptr<const FileScan> find(const std::string& canonical, const struct stat& st);
  void add(const std::string& canonical, std::shared_ptr<const FileScan> scan);
  void save();

 private:
  void load_locked();
  // Whether the file at `path`, on device `dev`, lies on a local file system (memoized by device).
  bool local_locked(const std::string& path, std::uint64_t dev);

  std::filesystem::path file_;
  std::int64_t too_new_ns_;
  std::size_t max_entries_;
  FileSystemTypeOf fs_type_of_;
  std::unordered_map<std::uint64_t, bool> local_devices_;
  std::mutex mutex_;
  std::mutex save_mutex_;  // one save at a time in a process
  bool loaded_ = false;
  std::unordered_map<std::string, std::shared_ptr<const FileScan>> entries_;
  std::unordered_set<std::string> mine_;  // used or added by this process
  bool dirty_ = false;
};

}  // namespace cubby
