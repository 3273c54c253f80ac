// A store's book of whole header scans, kept between processes (ccache's manifest, for the scan):
// a fresh process checks what an earlier process's scan of the same include set looked at (a
// stat per file and folder) instead of walking the include graph again (CuPy's include folders:
// ~950 headers, 20-50 ms a scan; one scan per include set per process).
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "key/include_scan.hpp"
#include "key/scan_watch.hpp"

namespace cubby {

// One whole scan as a later process may use it: its result, what it depends on besides files
// (its include-test macros and the source's calls of them, as ScanWatch keeps them), everything
// it looked at with what it saw, and `limit_ns` (CLOCK_REALTIME before the scan read anything,
// less the "too new" window: what it saw was changed before then).
struct BookedScan {
  std::shared_ptr<const HeaderScan> result;
  std::set<std::string, std::less<>> macros;
  std::vector<std::string> calls;  // ScanWatch::calls_of(the source's calls, macros)
  ScanWatch::Looked looked;
  std::int64_t limit_ns = 0;
};

// A page's bytes (one file per memo key and toolkit):
//   page    := magic version lexer cubby:str memo_key:str toolkit:str count:u32 scan* checksum
//   magic   := "cubby scan book\n" (16 bytes)
//   version := u32 (kScanBookVersion)       lexer := u32 (kIncludeLexerVersion)
//   cubby   := the library's version (kVersion): another release's scanner may find otherwise
//   scan    := limit_ns:i64 macros:list calls:list folders:u32 folder* files:u32 file*
//              absent:list headers:u32 header* unresolvable:list
//   folder  := path:str is_dir:u8 stat every_name:u8 asked:u32 (name:str answer:u8)*
//   file    := path:str stat            stat := dev:u64 ino:u64 size:u64 mtime_ns:i64 ctime_ns:i64
//   header  := include:str path:str resolved:u8 content_hash:16 bytes
//   str, list: record_bytes.hpp        checksum := hash128 of everything before it (16 bytes)
// Newest scan first; integers little-endian. A page holds a scan's result, not only its inputs:
// bump kScanBookVersion with any change to what scan_includes finds for the same files (the
// lexer's version covers the lexer alone), as a key change bumps the key's version.
inline constexpr std::uint32_t kScanBookVersion = 1;

struct BookPage {
  std::string memo_key;
  std::string toolkit;
  std::vector<BookedScan> scans;
  struct stat opened {};  // the page file as ScanBook::open read it (not encoded; zero: none)
};
std::string encode_book_page(const BookPage& page);
// The page in `bytes`; nullopt for anything but a whole, intact page of this version and lexer.
std::optional<BookPage> decode_book_page(std::string_view bytes);

// The book in `folder` (a store's tmp/), one per user: "scan-book-<effective uid>/", a page a
// file named by a hash of the memo key and the toolkit. Contract:
// - `open` reads the page of `memo_key` (include_scan.cpp's hash of what a scan reads besides
//   files) under `toolkit` (toolkit_headers_identity of the toolkit folder: the toolkit's part of
//   a scan is keyed by it), once for both uses: `find` a scan in it, else `add` a new scan to it.
// - Only a page this process's user alone can have written is read (io::read_own_file, as the
//   scan record: another member of a group-shared store could otherwise hide a header from a
//   key); another's, a missing, unreadable, corrupt or other version's page is opened as a page
//   with no scans.
// - `find` answers the newest scan of `page` whose macros' calls in `calls` (the source's) are
//   the booked ones (null: none). It does not check the files: the caller does
//   (ScanWatch::still_true or ScanWatch::remember) before using the scan.
// - `add` puts `scan` first in `page` (as `open` gave it), dropping a scan of the same macros and
//   calls and any beyond kMaxScans, and writes the page whole (a temp file renamed over it:
//   readers never see a torn page). If the page file changed since `open` (another process
//   added a scan meanwhile), it is read again and the scan merged into that; between that read
//   and the rename, last writer wins. Only scans ScanWatch could remember are added (every folder
//   on a file system whose changes the kernel sees, each file changed before `limit_ns`), and only
//   those that found a header file (include_scan.cpp). A failed write (read-only store) costs time
//   only.
// Thread-safe (no state but the folder and a count of reads).
class ScanBook {
 public:
  static constexpr std::size_t kMaxScans = 4;            // variants of one include set
  static constexpr std::uint64_t kMaxBytes = 16u << 20;  // a larger page is not read

  explicit ScanBook(const std::filesystem::path& folder);

  const std::filesystem::path& folder() const { return folder_; }
  BookPage open(const std::string& memo_key, std::string_view toolkit) const;
  static BookedScan* find(BookPage& page, const std::vector<std::string>& calls);
  void add(BookPage page, BookedScan scan) const;
  // How many times this book read a page file (a missing one included): a diagnostic for tests.
  std::uint64_t pages_read() const { return pages_read_.load(std::memory_order_relaxed); }

 private:
  std::filesystem::path page_file(const std::string& memo_key, std::string_view toolkit) const;

  std::filesystem::path folder_;  // <store>/tmp/scan-book-<uid>
  mutable std::atomic<std::uint64_t> pages_read_{0};
};

}  // namespace cubby
