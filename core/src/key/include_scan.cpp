// The recursive header scan over NVRTC's search order, memoized per file.
#include "key/include_scan.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "key/file_scans.hpp"
#include "key/folder_fingerprint.hpp"
#include "key/folder_listing.hpp"
#include "key/header_scanner.hpp"
#include "key/scan_book.hpp"
#include "key/scan_place.hpp"
#include "key/scan_record.hpp"
#include "key/scan_watch.hpp"
#include "key/toolkit_headers.hpp"
#include "key/toolkit_names.hpp"
#include "util/hash.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

// Scans this process answered from a place's book (header_scans_booked).
std::atomic<std::uint64_t> booked_served{0};

// Absolute form of a search folder: relative folders are taken from the working folder, as NVRTC
// (which opens them relative to it) does. Trailing slashes are dropped ("/" stays "/").
std::string absolute_dir(const std::filesystem::path& dir, std::string& cwd) {
  std::string text = dir.string();
  if (text.empty() || text.front() != '/') {
    if (cwd.empty()) {
      std::error_code ec;
      cwd = std::filesystem::current_path(ec).string();
      if (ec || cwd.empty()) {
        cwd.assign(1, '/');  // not = "/": GCC 12's -Wrestrict misreads it at -O3
      }
    }
    if (text.empty()) {
      text = cwd;
    } else {
      std::string joined = cwd;
      if (joined.back() != '/') joined += '/';
      joined += text;
      text = std::move(joined);
    }
  }
  while (text.size() > 1 && text.back() == '/') {
    text.pop_back();
  }
  return text;
}

// `scan` with kSourceMark replaced by `program_name` ("<program>" when empty): `scan` itself when
// no line names the program (the usual case: nothing to copy).
std::shared_ptr<const HeaderScan> named(std::shared_ptr<const HeaderScan> scan,
                                        const std::string& program_name) {
  const auto marked = [](const std::string& line) { return line.starts_with(kSourceMark); };
  if (std::none_of(scan->unresolvable.begin(), scan->unresolvable.end(), marked)) return scan;
  auto copy = std::make_shared<HeaderScan>(*scan);
  for (std::string& line : copy->unresolvable) {
    if (marked(line)) {
      line.replace(0, kSourceMark.size() - 1, program_name.empty() ? "<program>" : program_name);
    }
  }
  return copy;
}

// What ScanWatch compares between two sources of one memo key (ScanWatch::find): the source's
// calls ("W <x>"), its definitions and the `-D` options' ("NAME =<definition>"), each kept there
// only where its name is one the scan's result depends on (Scanner::memo_names).
std::vector<std::string> memo_calls(const IncludeList& list, const IncludeSearch& search) {
  std::vector<std::string> calls = list.calls;
  const auto add = [&](const std::string& definition) {
    std::size_t end = 0;
    while (end < definition.size() && definition[end] != ' ' && definition[end] != '(') ++end;
    calls.push_back(definition.substr(0, end) + " =" + definition);
  };
  for (const std::string& definition : list.defines) add(definition);
  for (const std::string& value : search.defines) add(definition_of_define_option(value));
  return calls;
}

// What a scan reads besides files and the source's macro calls (ScanWatch::find checks those),
// hashed: what the source lists (its include directives and include-test macros: programs that
// differ elsewhere share a scan), the search and (where a folder is relative or files are
// pre-included) the working folder.
std::string scan_memo_key(const IncludeList& list, const IncludeSearch& search) {
  std::string text;
  bool relative = !search.pre_includes.empty();
  const auto add = [&](char tag, const std::string& value) {
    text += '\0';
    text += tag;
    text += value;
    relative = relative || (!value.empty() && value.front() != '/');
  };
  add('P', search.program_dir.string());
  for (const auto& dir : search.include_paths) add('I', dir.string());
  for (const auto& dir : search.toolkit_dirs) add('T', dir.string());
  for (const auto& file : search.pre_includes) add('R', file);
  for (const auto* names :
       {&list.names, &list.unresolvable, &list.test_macros, &list.forwards, &list.computed}) {
    text += '\1';
    text += std::to_string(names->size());  // each list's length: no name can end one early
    for (const std::string& name : *names) {
      text += '\0';
      text += name;
    }
  }
  if (relative) {
    std::error_code ec;
    text += '\0';
    text += std::filesystem::current_path(ec).string();
  }
  const auto digest = hash128(text);
  return std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
}

}  // namespace

// Candidate folders, for quoted and angled includes alike: the including file's folder, then
// the program's folder, then the include paths in order (a superset of NVRTC's search, which
// uses the program's folder for the source's quoted includes only). Every existing regular file
// among them is recorded and scanned, so a header that would shadow another (or be shadowed)
// changes the result. Pre-included files are looked up in the working folder first.
HeaderScan scan_includes(std::string_view source, const IncludeSearch& search,
                         const ScanPlace& place) {
  return *scan_includes_shared(source, search, place);
}

HeaderScan scan_includes(std::string_view source, const IncludeSearch& search) {
  return scan_includes(source, search, ScanPlace::none());
}

std::shared_ptr<const HeaderScan> scan_includes_shared(std::string_view source,
                                                       const IncludeSearch& search,
                                                       const ScanPlace& place) {
  const IncludeList list = list_includes(source);
  const std::string memo_key = scan_memo_key(list, search);
  const std::vector<std::string> calls = memo_calls(list, search);
  ScanWatch& watch = ScanWatch::process();
  if (std::shared_ptr<const HeaderScan> memoized = watch.find(memo_key, calls)) {
    return named(std::move(memoized), search.program_name);
  }
  // The book's page is named by the toolkit too: the toolkit's part of a scan is keyed by it.
  const std::string toolkit = place.book() == nullptr || search.toolkit_dirs.empty()
                                  ? std::string()
                                  : toolkit_headers_identity(search.toolkit_dirs.back());
  BookPage page;  // the book's page as read: a scan it cannot serve is added to it
  if (place.book() != nullptr) {
    page = place.book()->open(memo_key, toolkit);
    if (BookedScan* booked = ScanBook::find(page, calls)) {
      // Remembered (its watches placed, then looked at again), or looked at again without watches.
      if (watch.remember(memo_key, booked->result, booked->macros, calls, booked->looked,
                         booked->limit_ns) ||
          ScanWatch::still_true(booked->looked, booked->limit_ns)) {
        booked_served.fetch_add(1, std::memory_order_relaxed);
        return named(std::move(booked->result), search.program_name);
      }
    }
  }
  const std::int64_t started_ns = realtime_ns();

  std::string cwd;
  std::vector<std::string> search_dirs;
  search_dirs.reserve(search.include_paths.size() + 1);
  if (!search.program_dir.empty()) search_dirs.push_back(absolute_dir(search.program_dir, cwd));
  std::vector<std::string> include_dirs;
  for (const auto& dir : search.include_paths) include_dirs.push_back(absolute_dir(dir, cwd));
  search_dirs.insert(search_dirs.end(), include_dirs.begin(), include_dirs.end());

  std::vector<std::string> toolkit_dirs;
  for (const auto& dir : search.toolkit_dirs) toolkit_dirs.push_back(absolute_dir(dir, cwd));
  Scanner scanner(std::move(search_dirs), std::move(include_dirs), std::move(toolkit_dirs),
                  search.defines, source, place);
  if (!search.pre_includes.empty()) {
    scanner.scan_pre_includes(search.pre_includes, absolute_dir(std::filesystem::path(), cwd));
  }
  scanner.add_unresolvable(std::string(kSourceMark), list.unresolvable);
  scanner.add_macros(std::string(kSourceMark), list, {});
  scanner.scan(list.names, std::vector<std::string>{});
  scanner.scan_indirect();
  if (place.record() != nullptr) place.record()->save();  // only if it read a file worth keeping
  // A tree fallback's files are not watched: such a scan is made again every time.
  if (scanner.covered_trees()) {
    return named(std::make_shared<const HeaderScan>(std::move(scanner).take()),
                 search.program_name);
  }
  BookedScan done;
  done.looked = scanner.looked();
  done.macros = scanner.memo_names();
  done.calls = ScanWatch::calls_of(calls, done.macros);
  done.limit_ns = started_ns - place.too_new_ns();
  done.result = std::make_shared<const HeaderScan>(std::move(scanner).take());
  std::shared_ptr<const HeaderScan> result = done.result;
  // Booked only when the memo could remember it (its folders are on file systems whose changes
  // the kernel sees, its files older than the "too new" window) and it read a file: a scan that
  // found no header costs next to nothing to make again.
  if (watch.remember(memo_key, result, done.macros, calls, done.looked, done.limit_ns) &&
      place.book() != nullptr && !done.looked.files.empty()) {
    place.book()->add(std::move(page), std::move(done));
  }
  return named(std::move(result), search.program_name);
}

void forget_header_scans() {
  ScanWatch::process().forget();
  ScanMemo& m = scan_memo();
  {
    const std::lock_guard lock(m.mutex);
    m.files.clear();
    m.candidates.clear();
  }
  forget_toolkit_closures();
  forget_folder_listings();
}

std::string parent_of(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) {
    return ".";
  }
  if (slash == 0) {
    return "/";
  }
  return std::string(path.substr(0, slash));
}

std::uint64_t header_files_read() { return scan_memo().files_read.load(std::memory_order_relaxed); }

std::uint64_t header_scans_memoized() { return ScanWatch::process().served(); }

std::uint64_t header_scans_booked() { return booked_served.load(std::memory_order_relaxed); }

bool header_changed_since(const std::string& path, const std::array<std::uint8_t, 16>& content_hash,
                          std::int64_t since_ns) {
  bool stable = false;
  const std::shared_ptr<const FileScan> now = read_scan(path, stable);
  return !stable || now->content_hash != content_hash || now->ctime_ns > since_ns;
}

std::vector<HeaderDigest> scan_headers(std::string_view source,
                                       const std::filesystem::path& source_dir,
                                       const std::vector<std::filesystem::path>& include_paths) {
  return scan_headers(source, source_dir, include_paths, ScanPlace::none());
}

std::vector<HeaderDigest> scan_headers(std::string_view source,
                                       const std::filesystem::path& source_dir,
                                       const std::vector<std::filesystem::path>& include_paths,
                                       const ScanPlace& place) {
  IncludeSearch search;
  search.program_dir = source_dir;
  search.include_paths = include_paths;
  return scan_includes(source, search, place).headers;
}

}  // namespace cubby
