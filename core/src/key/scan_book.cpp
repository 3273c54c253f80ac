// The book of whole scans between processes: its page format and the read-modify-write of a page.
#include "key/scan_book.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "cubby/version.hpp"
#include "key/include_lexer.hpp"
#include "key/record_bytes.hpp"
#include "key/scan_record.hpp"
#include "util/bytes.hpp"
#include "util/file_trust.hpp"
#include "util/hash.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

constexpr std::string_view kMagic = "cubby scan book\n";
constexpr std::size_t kStatBytes = 40;

void put_stat(std::string& out, const struct stat& st) {
  put_le<std::uint64_t>(out, static_cast<std::uint64_t>(st.st_dev));
  put_le<std::uint64_t>(out, static_cast<std::uint64_t>(st.st_ino));
  put_le<std::uint64_t>(out, static_cast<std::uint64_t>(st.st_size));
  put_le<std::int64_t>(out, FileScan::mtime_of(st));
  put_le<std::int64_t>(out, FileScan::ctime_of(st));
}

// The fields put_stat wrote (those FileScan::same_state compares), the rest zero.
struct stat get_stat(RecordReader& in) {
  struct stat st {};
  st.st_dev = static_cast<dev_t>(in.integer<std::uint64_t>());
  st.st_ino = static_cast<ino_t>(in.integer<std::uint64_t>());
  st.st_size = static_cast<off_t>(in.integer<std::uint64_t>());
  for (timespec* stamp : {&st.st_mtim, &st.st_ctim}) {
    const auto ns = in.integer<std::int64_t>();
    stamp->tv_sec = static_cast<time_t>(ns / 1000000000);
    stamp->tv_nsec = static_cast<long>(ns % 1000000000);
  }
  return st;
}

void put_scan(std::string& out, const BookedScan& scan) {
  put_le<std::int64_t>(out, scan.limit_ns);
  put_list(out, {scan.macros.begin(), scan.macros.end()});
  put_list(out, scan.calls);
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(scan.looked.folders.size()));
  for (const ScanWatch::Folder& folder : scan.looked.folders) {
    put_str(out, folder.path);
    out += static_cast<char>(folder.is_dir);
    put_stat(out, folder.st);
    out += static_cast<char>(folder.every_name);
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(folder.asked.size()));
    for (const auto& [name, answer] : folder.asked) {
      put_str(out, name);
      out += static_cast<char>(answer);
    }
  }
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(scan.looked.files.size()));
  for (const ScanWatch::File& file : scan.looked.files) {
    put_str(out, file.path);
    put_stat(out, file.st);
  }
  put_list(out, scan.looked.absent);
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(scan.result->headers.size()));
  for (const HeaderDigest& header : scan.result->headers) {
    put_str(out, header.include);
    put_str(out, header.path);
    out += static_cast<char>(header.resolved);
    out.append(reinterpret_cast<const char*>(header.content_hash.data()),
               header.content_hash.size());
  }
  put_list(out, scan.result->unresolvable);
}

bool get_flag(RecordReader& in) { return in.raw(1) == std::string_view("\1", 1); }

BookedScan get_scan(RecordReader& in) {
  BookedScan scan;
  scan.limit_ns = in.integer<std::int64_t>();
  for (std::string& macro : in.list()) scan.macros.insert(std::move(macro));
  scan.calls = in.list();
  const auto folders = in.integer<std::uint32_t>();
  if (!in.fits(folders, 4 + 2 + kStatBytes + 4)) return scan;
  for (std::uint32_t i = 0; i < folders && in.ok(); ++i) {
    ScanWatch::Folder folder;
    folder.path = in.str();
    folder.is_dir = get_flag(in);
    folder.st = get_stat(in);
    folder.every_name = get_flag(in);
    const auto asked = in.integer<std::uint32_t>();
    if (!in.fits(asked, 5)) break;
    for (std::uint32_t j = 0; j < asked && in.ok(); ++j) {
      std::string name = in.str();
      folder.asked.emplace_back(std::move(name), get_flag(in));
    }
    scan.looked.folders.push_back(std::move(folder));
  }
  const auto files = in.integer<std::uint32_t>();
  if (!in.fits(files, 4 + kStatBytes)) return scan;
  for (std::uint32_t i = 0; i < files && in.ok(); ++i) {
    std::string path = in.str();
    scan.looked.files.push_back({std::move(path), get_stat(in)});
  }
  scan.looked.absent = in.list();
  auto result = std::make_shared<HeaderScan>();
  const auto headers = in.integer<std::uint32_t>();
  if (!in.fits(headers, 4 + 4 + 1 + 16)) return scan;
  for (std::uint32_t i = 0; i < headers && in.ok(); ++i) {
    HeaderDigest header;
    header.include = in.str();
    header.path = in.str();
    header.resolved = get_flag(in);
    const std::string_view hash = in.raw(header.content_hash.size());
    if (!in.ok()) break;
    std::memcpy(header.content_hash.data(), hash.data(), hash.size());
    result->headers.push_back(std::move(header));
  }
  result->unresolvable = in.list();
  scan.result = std::move(result);
  return scan;
}

}  // namespace

std::string encode_book_page(const BookPage& page) {
  std::string out = start_record(kMagic, kScanBookVersion, kIncludeLexerVersion);
  put_str(out, kVersion);
  put_str(out, page.memo_key);
  put_str(out, page.toolkit);
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(page.scans.size()));
  for (const BookedScan& scan : page.scans) put_scan(out, scan);
  seal_record(out);
  return out;
}

std::optional<BookPage> decode_book_page(std::string_view bytes) {
  std::optional<RecordReader> opened =
      open_record(bytes, kMagic, kScanBookVersion, kIncludeLexerVersion);
  if (!opened) return std::nullopt;
  RecordReader& in = *opened;
  if (in.str() != kVersion) return std::nullopt;
  BookPage page;
  page.memo_key = in.str();
  page.toolkit = in.str();
  const auto count = in.integer<std::uint32_t>();
  if (!in.fits(count, 8)) return std::nullopt;
  for (std::uint32_t i = 0; i < count && in.ok(); ++i) page.scans.push_back(get_scan(in));
  if (!in.ok() || !in.at_end()) return std::nullopt;
  return page;
}

ScanBook::ScanBook(const std::filesystem::path& folder)
    : folder_(folder / ("scan-book-" + std::to_string(::geteuid()))) {}

std::filesystem::path ScanBook::page_file(const std::string& memo_key,
                                          std::string_view toolkit) const {
  std::string named = memo_key;
  named += '\0';
  named += toolkit;
  const auto digest = hash128(named);
  return folder_ / to_hex(digest.data(), digest.size());
}

BookPage ScanBook::open(const std::string& memo_key, std::string_view toolkit) const {
  pages_read_.fetch_add(1, std::memory_order_relaxed);
  struct stat opened {};
  auto bytes = io::read_own_file(page_file(memo_key, toolkit), kMaxBytes, &opened);
  std::optional<BookPage> page;
  if (bytes) page = decode_book_page(*bytes);
  // A page renamed over another's name is not that page.
  if (!page || page->memo_key != memo_key || page->toolkit != toolkit) {
    page = BookPage{memo_key, std::string(toolkit), {}};
  }
  page->opened = opened;
  return std::move(*page);
}

BookedScan* ScanBook::find(BookPage& page, const std::vector<std::string>& calls) {
  for (BookedScan& scan : page.scans) {
    if (ScanWatch::calls_of(calls, scan.macros) == scan.calls) return &scan;
  }
  return nullptr;
}

void ScanBook::add(BookPage page, BookedScan scan) const {
  struct stat now {};
  const std::filesystem::path file = page_file(page.memo_key, page.toolkit);
  if (::stat(file.c_str(), &now) != 0) now = {};
  if (!FileScan::same_state(now, page.opened)) {
    page = open(page.memo_key, page.toolkit);  // another process wrote it since: merge into that
  }
  std::vector<BookedScan> old = std::move(page.scans);
  page.scans.clear();
  page.scans.reserve(old.size() + 1);
  page.scans.push_back(std::move(scan));
  for (BookedScan& other : old) {
    if (page.scans.size() >= kMaxScans) break;
    const BookedScan& added = page.scans.front();
    if (other.macros == added.macros && other.calls == added.calls) continue;
    page.scans.push_back(std::move(other));
  }
  // A cache: failure costs time. Writable by this user only (another's page is never read).
  (void)io::write_file_atomic(file, encode_book_page(page), io::FileMode::owner_writable);
}

}  // namespace cubby
