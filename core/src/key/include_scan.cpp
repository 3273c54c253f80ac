// The recursive header scan over NVRTC's search order, memoized per file.
#include "key/include_scan.hpp"

#include <sys/stat.h>

#include <algorithm>
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
#include "key/scan_record.hpp"
#include "key/scan_watch.hpp"
#include "key/toolkit_names.hpp"
#include "util/hash.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

// Absolute form of a search folder: relative folders are taken from the working folder, as NVRTC
// (which opens them relative to it) does. Trailing slashes are dropped ("/" stays "/").
std::string absolute_dir(const std::filesystem::path& dir, std::string& cwd) {
  std::string text = dir.string();
  if (text.empty() || text.front() != '/') {
    if (cwd.empty()) {
      std::error_code ec;
      cwd = std::filesystem::current_path(ec).string();
      if (ec || cwd.empty()) {
        cwd = "/";
      }
    }
    text = text.empty() ? cwd : (cwd.back() == '/' ? cwd : cwd + "/") + text;
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
HeaderScan scan_includes(std::string_view source, const IncludeSearch& search) {
  return *scan_includes_shared(source, search);
}

std::shared_ptr<const HeaderScan> scan_includes_shared(std::string_view source,
                                                       const IncludeSearch& search) {
  const IncludeList list = list_includes(source);
  const std::string memo_key = scan_memo_key(list, search);
  const std::vector<std::string> calls = memo_calls(list, search);
  ScanWatch& watch = ScanWatch::process();
  if (std::shared_ptr<const HeaderScan> memoized = watch.find(memo_key, calls)) {
    return named(std::move(memoized), search.program_name);
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
                  search.defines, source);
  if (!search.pre_includes.empty()) {
    scanner.scan_pre_includes(search.pre_includes, absolute_dir(std::filesystem::path(), cwd));
  }
  scanner.add_unresolvable(std::string(kSourceMark), list.unresolvable);
  scanner.add_macros(std::string(kSourceMark), list, {});
  scanner.scan(list.names, std::vector<std::string>{});
  scanner.scan_indirect();
  std::shared_ptr<ScanRecord> record;
  std::int64_t too_new_ns = ScanRecord::kTooNewNs;
  {
    ScanMemo& m = scan_memo();
    const std::lock_guard lock(m.mutex);
    record = m.record;
    too_new_ns = m.too_new_ns;
  }
  if (record) record->save();  // writes only if this scan read a file worth recording
  const ScanWatch::Looked looked = scanner.looked();
  const std::set<std::string, std::less<>> macros = scanner.memo_names();
  const bool covered_trees = scanner.covered_trees();
  auto result = std::make_shared<const HeaderScan>(std::move(scanner).take());
  // A tree fallback's files are not watched: such a scan is made again every time.
  if (!covered_trees)
    watch.remember(memo_key, result, macros, calls, looked, started_ns, too_new_ns);
  return named(std::move(result), search.program_name);
}

void set_toolkit_names_folder(const std::filesystem::path& folder, std::int64_t too_new_ns) {
  set_toolkit_names_path(folder);
  ScanMemo& m = scan_memo();
  const std::lock_guard lock(m.mutex);
  m.too_new_ns = too_new_ns;
  if (folder.empty()) {
    m.record = nullptr;
  } else if (!m.record || m.record->file() != scan_record_file(folder) ||
             m.record->too_new_ns() != too_new_ns) {
    m.record = std::make_shared<ScanRecord>(scan_record_file(folder), too_new_ns);
  }
}

void forget_header_scans() {
  ScanWatch::process().forget();
  ScanMemo& m = scan_memo();
  {
    const std::lock_guard lock(m.mutex);
    m.files.clear();
    m.candidates.clear();
    if (m.record) m.record = std::make_shared<ScanRecord>(m.record->file(), m.record->too_new_ns());
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

bool header_changed_since(const std::string& path, const std::array<std::uint8_t, 16>& content_hash,
                          std::int64_t since_ns) {
  bool stable = false;
  const std::shared_ptr<const FileScan> now = read_scan(path, stable);
  return !stable || now->content_hash != content_hash || now->ctime_ns > since_ns;
}

std::vector<HeaderDigest> scan_headers(std::string_view source,
                                       const std::filesystem::path& source_dir,
                                       const std::vector<std::filesystem::path>& include_paths) {
  IncludeSearch search;
  search.program_dir = source_dir;
  search.include_paths = include_paths;
  return scan_includes(source, search).headers;
}

}  // namespace cubby
