// The per-process memo of scanned files; contract in file_scans.hpp.
#include "key/file_scans.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "key/file_system_trust.hpp"
#include "key/include_lexer.hpp"
#include "util/hash.hpp"

namespace cubby {
namespace {

// realpath(candidate), given `folder()`, realpath of its folder ("" when unknown): the folder's
// canonical path and the file's name, unless the name itself is a symlink (or "." / ".."), which
// only realpath resolves. One lstat instead of a readlink per path component (CuPy's headers:
// ~8,300 readlinks a fresh process, measured with strace, for ~360 headers in ~40 folders).
bool canonical_of(const std::string& candidate, const FolderOf& folder_of, std::string& out) {
  const std::size_t slash = candidate.rfind('/');
  const std::string_view name = slash == std::string::npos
                                    ? std::string_view(candidate)
                                    : std::string_view(candidate).substr(slash + 1);
  struct stat link {};
  if (!name.empty() && name != "." && name != ".." && ::lstat(candidate.c_str(), &link) == 0 &&
      !S_ISLNK(link.st_mode)) {
    const std::string& folder = folder_of();
    if (!folder.empty()) {
      // Appended piece by piece: GCC 12's -Wrestrict misreads "/" + std::string at -O3.
      out = folder == "/" ? std::string() : folder;
      out += '/';
      out += name;
      return true;
    }
  }
  out = real_path(candidate);
  return !out.empty();
}

}  // namespace

ScanMemo& scan_memo() {
  static ScanMemo* instance =
      new ScanMemo();  // never destroyed: usable from threads still running at exit
  return *instance;
}

std::shared_ptr<const FileScan> read_scan(const std::string& canonical, bool& stable) {
  auto scan = std::make_shared<FileScan>();
  stable = false;
  scan_memo().files_read.fetch_add(1, std::memory_order_relaxed);
  scan->read_ns = realtime_ns();  // before the file is opened: ScanRecord's "too new" rule
  const int fd = ::open(canonical.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return scan;
  }
  struct stat before {};
  if (::fstat(fd, &before) != 0) {
    ::close(fd);
    return scan;
  }
  std::string text;
  text.resize(static_cast<std::size_t>(before.st_size > 0 ? before.st_size : 0) + 1);
  std::size_t used = 0;
  bool ok = true;
  for (;;) {
    if (used == text.size()) {
      text.resize(text.size() * 2);
    }
    const ssize_t got = ::read(fd, text.data() + used, text.size() - used);
    if (got == 0) {
      break;
    }
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      ok = false;
      break;
    }
    used += static_cast<std::size_t>(got);
  }
  struct stat after {};
  const bool after_ok = ::fstat(fd, &after) == 0;
  ::close(fd);
  if (!ok) {
    return scan;
  }
  text.resize(used);

  scan->dev = static_cast<std::uint64_t>(before.st_dev);
  scan->ino = static_cast<std::uint64_t>(before.st_ino);
  scan->size = static_cast<std::uint64_t>(before.st_size);
  scan->mtime_ns = FileScan::mtime_of(before);
  scan->ctime_ns = FileScan::ctime_of(before);
  scan->content_hash = hash128(text);
  IncludeList list = list_includes(text);
  scan->includes = std::move(list.names);
  scan->unresolvable = std::move(list.unresolvable);
  scan->test_macros = std::move(list.test_macros);
  scan->forwards = std::move(list.forwards);
  scan->calls = std::move(list.calls);
  scan->defines = std::move(list.defines);
  scan->computed = std::move(list.computed);
  stable = after_ok && FileScan::same_state(before, after) &&
           used == static_cast<std::uint64_t>(before.st_size);
  return scan;
}

std::string real_path(const std::string& path) {
  char real[PATH_MAX];
  return ::realpath(path.c_str(), real) != nullptr ? std::string(real) : std::string();
}

bool resolve_file(const std::string& candidate, const struct stat& st, const FolderOf& folder_of,
                  ScanRecord* record, Resolved& out) {
  ScanMemo& m = scan_memo();
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    auto it = m.candidates.find(candidate);
    if (it != m.candidates.end() && it->second.scan->matches(st)) {
      out = it->second;
      return true;
    }
  }
  if (!canonical_of(candidate, folder_of, out.canonical)) return false;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    auto it = m.files.find(out.canonical);
    if (it != m.files.end() && it->second->matches(st)) {
      out.scan = it->second;
      m.candidates[candidate] = out;
      return true;
    }
  }
  if (record != nullptr) {
    if (auto recorded = record->find(out.canonical, st)) {
      out.scan = std::move(recorded);
      std::lock_guard<std::mutex> lock(m.mutex);
      m.files[out.canonical] = out.scan;
      m.candidates[candidate] = out;
      return true;
    }
  }
  bool stable = false;
  out.scan = read_scan(out.canonical, stable);
  // Only a file whose stat can prove it unchanged is answered by stat later
  // (file_system_trust.hpp).
  if (stable && out.scan->matches(st) && device_trusted(out.canonical, st.st_dev)) {
    if (record != nullptr) record->add(out.canonical, out.scan);
    std::lock_guard<std::mutex> lock(m.mutex);
    m.files[out.canonical] = out.scan;
    m.candidates[candidate] = out;
  }
  return true;
}

}  // namespace cubby
