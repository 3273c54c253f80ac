// The recursive header scan over NVRTC's search order, memoized per file.
#include "key/include_scan.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "key/scan_record.hpp"
#include "key/scan_watch.hpp"
#include "key/toolkit_headers.hpp"
#include "util/bytes.hpp"
#include "util/hash.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

// The per-process memo. `files`: canonical path -> last scan of that file. `candidates`: a path as
// tried (folder + include) -> the canonical path it resolved to and that file's scan, so a warm
// lookup costs one stat. Both are valid while `FileScan::matches` the stat of the path tried; the
// file identity in it (device, inode) ties a candidate to the file `realpath` found. Known limit:
// a hard link reached through a retargeted symlink keeps its earlier canonical path (the content
// hash is still right). Entries are immutable once published.
struct Resolved {
  std::string canonical;
  std::shared_ptr<const FileScan> scan;
};

struct Memo {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const FileScan>> files;
  std::unordered_map<std::string, Resolved> candidates;
  std::shared_ptr<ScanRecord> record;  // the store's (set_toolkit_names_folder); null: none
  std::int64_t too_new_ns = ScanRecord::kTooNewNs;  // set_toolkit_names_folder's, for ScanWatch
  std::atomic<std::uint64_t> files_read{0};
};

// A per-process table of one kind of memo, by name (forget_header_scans empties it).
template <class Value>
struct MemoTable {
  std::mutex mutex;
  std::unordered_map<std::string, Value> known;
};
template <class Value>
MemoTable<Value>& memo_table() {
  static auto* instance = new MemoTable<Value>();  // never destroyed: usable at exit
  return *instance;
}

Memo& memo() {
  static Memo* instance = new Memo();  // never destroyed: usable from threads still running at exit
  return *instance;
}

// Reads and scans `canonical`. `stable` tells whether the file did not change while it was read
// (only then may the scan be memoized). On a read failure the scan has a zero hash and no
// includes and is not stable (a later call retries).
std::shared_ptr<const FileScan> read_scan(const std::string& canonical, bool& stable) {
  auto scan = std::make_shared<FileScan>();
  stable = false;
  memo().files_read.fetch_add(1, std::memory_order_relaxed);
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
  stable = after_ok && FileScan::same_state(before, after) &&
           used == static_cast<std::uint64_t>(before.st_size);
  return scan;
}

// realpath(3) of `path`, "" when it fails (a canonical path is never empty).
std::string real_path(const std::string& path) {
  char real[PATH_MAX];
  return ::realpath(path.c_str(), real) != nullptr ? std::string(real) : std::string();
}

// realpath(candidate), given `folder()`, realpath of its folder ("" when unknown): the folder's
// canonical path and the file's name, unless the name itself is a symlink (or "." / ".."), which
// only realpath resolves. One lstat instead of a readlink per path component (CuPy's headers:
// ~8,300 readlinks a fresh process, measured with strace, for ~360 headers in ~40 folders).
template <class FolderOf>
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
      out = folder == "/" ? "/" + std::string(name) : folder + "/" + std::string(name);
      return true;
    }
  }
  out = real_path(candidate);
  return !out.empty();
}

// The canonical path and scan of the regular file at `candidate`, whose stat is `st`; false if
// its canonical path cannot be found (it vanished meanwhile). `folder_of`: as canonical_of's.
template <class FolderOf>
bool resolve_file(const std::string& candidate, const struct stat& st, const FolderOf& folder_of,
                  Resolved& out) {
  Memo& m = memo();
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
  std::shared_ptr<ScanRecord> record;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    record = m.record;
  }
  if (record) {
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
  if (stable && out.scan->matches(st)) {
    if (record) record->add(out.canonical, out.scan);
    std::lock_guard<std::mutex> lock(m.mutex);
    m.files[out.canonical] = out.scan;
    m.candidates[candidate] = out;
  }
  return true;
}

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

// Names by first path component ("cuda" -> {"cuda/std/version", ...}).
using ToolkitNames = std::map<std::string, std::vector<std::string>, std::less<>>;

// Every name the toolkit headers reached from `root` include or probe (root included), found by
// following each name into its includer's folder and every toolkit folder (all existing
// candidates: a superset). Memoized per process by (toolkit folders, root); never invalidated.

// The folder set_toolkit_names_folder chose (empty: none).
struct NamesFolder {
  std::mutex mutex;
  std::filesystem::path path;
};
NamesFolder& names_folder() {
  static auto* instance = new NamesFolder();  // never destroyed: usable at exit
  return *instance;
}

// The file that keeps the closure of `memo_key` between processes (empty: none): named by a hash
// of the key and the identity of the toolkit's include folder (the last toolkit folder: the others
// lie inside it), so an added, removed or resized toolkit header gives another file.
std::filesystem::path persisted_closure(const std::string& memo_key,
                                        const std::vector<std::string>& toolkit_dirs) {
  NamesFolder& folder = names_folder();
  std::filesystem::path base;
  {
    const std::lock_guard lock(folder.mutex);
    base = folder.path;
  }
  if (base.empty() || toolkit_dirs.empty()) return {};
  const auto digest = hash128(memo_key + '\1' + toolkit_headers_identity(toolkit_dirs.back()));
  return toolkit_names_file(base, to_hex(digest.data(), digest.size()));
}

ToolkitNames group_names(const std::set<std::string>& names) {
  ToolkitNames grouped;
  for (const std::string& name : names) {
    if (!name.empty() && name.front() != '/')
      grouped[name.substr(0, name.find('/'))].push_back(name);
  }
  return grouped;
}

std::shared_ptr<const ToolkitNames> toolkit_closure(const std::vector<std::string>& toolkit_dirs,
                                                    const std::string& root) {
  auto& [mutex, known] = memo_table<std::shared_ptr<const ToolkitNames>>();
  std::string memo_key = root;
  for (const std::string& dir : toolkit_dirs) memo_key += '\0' + dir;
  {
    const std::lock_guard lock(mutex);
    if (auto found = known.find(memo_key); found != known.end()) return found->second;
  }
  // Another process's result: one name a line, the file ending in a line "end".
  const std::filesystem::path file = persisted_closure(memo_key, toolkit_dirs);
  if (!file.empty()) {
    if (auto text = read_toolkit_names(file); text && text->ends_with("\nend\n")) {
      std::set<std::string> names;
      std::size_t at = 0;
      for (std::size_t end; (end = text->find('\n', at)) != text->size() - 1; at = end + 1) {
        names.insert(text->substr(at, end - at));
      }
      auto result = std::make_shared<const ToolkitNames>(group_names(names));
      const std::lock_guard lock(mutex);
      return known.try_emplace(memo_key, std::move(result)).first->second;
    }
  }
  std::set<std::string> names{root};
  std::set<std::pair<std::uint64_t, std::uint64_t>> visited;  // (device, inode)
  std::set<std::string, std::less<>> tried;                   // candidates looked at
  std::vector<std::pair<std::string, std::string>> pending{{root, std::string()}};  // name, from
  while (!pending.empty()) {
    auto [name, from_dir] = std::move(pending.back());
    pending.pop_back();
    if (name.empty() || name.front() == '/') continue;
    std::vector<const std::string*> dirs;
    if (!from_dir.empty()) dirs.push_back(&from_dir);
    for (const std::string& dir : toolkit_dirs) dirs.push_back(&dir);
    for (const std::string* dir : dirs) {
      std::string candidate = *dir + "/" + name;
      if (!tried.insert(candidate).second) continue;
      struct stat st {};
      if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (!visited
               .insert(
                   {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)})
               .second) {
        continue;
      }
      bool stable = false;  // the closure is memoized as a whole: the file memo is not needed
      const std::shared_ptr<const FileScan> scan = read_scan(candidate, stable);
      for (const std::string& include : scan->includes) {
        names.insert(include);
        pending.emplace_back(include, parent_of(candidate));
      }
    }
  }
  if (!file.empty()) {
    std::string text;
    for (const std::string& name : names) {
      if (name.find('\n') == std::string::npos) text += name + '\n';
    }
    write_toolkit_names(file, text + "end\n");  // a cache: a failed write costs time only
  }
  auto result = std::make_shared<const ToolkitNames>(group_names(names));
  const std::lock_guard lock(mutex);
  return known.try_emplace(memo_key, std::move(result)).first->second;
}

// The names of one folder, for telling that a name is not there without a stat. A folder may be
// case-insensitive (vfat, SMB, ext4 casefold), so names are compared with ASCII case folded, and a
// folder with any non-ASCII name (which Unicode folding could match) may hold any name.
class NameSet {
 public:
  void add(std::string_view name) {
    std::string folded;
    if (!fold(name, folded)) ascii_ = false;
    names_.insert(std::move(folded));
  }
  bool empty() const { return names_.empty(); }
  // False only if no name of the folder can be `name`.
  bool may_contain(std::string_view name) const {
    std::string folded;
    return !ascii_ || !fold(name, folded) || names_.contains(folded);
  }

 private:
  // `name` with ASCII letters lowered into `out`; false if it has a non-ASCII byte.
  static bool fold(std::string_view name, std::string& out) {
    out.reserve(name.size());
    bool ascii = true;
    for (const char c : name) {
      ascii = ascii && static_cast<unsigned char>(c) < 0x80;
      out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
    return ascii;
  }
  std::unordered_set<std::string> names_;
  bool ascii_ = true;
};

// The names in folder `dir`, whose stat is `st` (a folder's); null if it cannot be listed whole.
// Memoized per process while the folder's identity, size, mtime and ctime are unchanged (adding,
// removing or renaming a name changes its mtime and ctime) and were older than the listing by
// ScanRecord::kTooNewNs (a name added within one time stamp granule after the listing may leave
// them as they were): no system call when nothing changed.
struct Listing {
  struct stat st {};
  std::shared_ptr<const NameSet> names;
};
std::shared_ptr<const NameSet> listing_of(const std::string& dir, const struct stat& st) {
  auto& [mutex, known] = memo_table<Listing>();
  {
    const std::lock_guard lock(mutex);
    if (auto found = known.find(dir);
        found != known.end() && FileScan::same_state(found->second.st, st)) {
      return found->second.names;
    }
  }
  const std::int64_t listed_ns = realtime_ns();
  auto names = std::make_shared<NameSet>();
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names->add(it->path().filename().string());
  }
  if (ec) return nullptr;
  struct stat after {};
  std::shared_ptr<const NameSet> result = std::move(names);
  if (::stat(dir.c_str(), &after) != 0 || !FileScan::same_state(st, after)) return nullptr;
  if (FileScan::changed_before(st, listed_ns - ScanRecord::kTooNewNs)) {
    const std::lock_guard lock(mutex);
    known[dir] = Listing{st, result};
  }
  return result;
}

class Scanner {
 public:
  Scanner(std::vector<std::string> search_dirs, std::vector<std::string> include_dirs,
          std::vector<std::string> toolkit_dirs)
      : search_dirs_(std::move(search_dirs)),
        include_dirs_(std::move(include_dirs)),
        toolkit_dirs_(std::move(toolkit_dirs)) {}

  // Looks every name the toolkit headers reached so far include up in the user's include paths
  // (NVRTC searches them before the toolkit; the program's folder only for the program's own
  // quoted includes), recording and scanning each existing file; repeated until no new toolkit
  // header is reached (a user file found so may include more). Nothing to do (and no toolkit
  // header read) while every include path is empty or missing.
  void scan_toolkit_names() {
    std::set<std::string> done_roots;
    bool any_names = false;
    for (const std::string& dir : include_dirs_) {
      const Folder& listed = folder(dir);
      any_names = any_names || (listed.is_dir && (!listed.names || !listed.names->empty()));
    }
    if (!any_names) return;
    while (true) {
      std::vector<std::string> roots;
      for (const std::string& root : toolkit_roots_) {
        if (done_roots.insert(root).second) roots.push_back(root);
      }
      if (roots.empty()) return;
      for (const std::string& root : roots) {
        for (const auto& [first, names] : *toolkit_closure(toolkit_dirs_, root)) {
          for (std::size_t d = 0; d < include_dirs_.size(); ++d) {
            if (!may_hold(include_dirs_[d], first)) continue;
            for (const std::string& name : names)
              try_candidate(name, include_dirs_[d] + "/" + name);
          }
        }
      }
    }
  }

  // What the toolkit's headers and the include-test macros reach, until neither reaches a file
  // more: a file found by one may call more test macros or include more toolkit headers.
  void scan_indirect() {
    for (std::size_t before = 0, now = 1; before != now;) {
      before = visited_.size() + sources_.size() + toolkit_roots_.size();
      resolve_test_macro_calls();
      scan_toolkit_names();
      now = visited_.size() + sources_.size() + toolkit_roots_.size();
    }
  }

  // Resolves every include in `includes`, seen from a file whose own folders are `own_dirs`,
  // records a digest for each existing candidate (or one unresolved digest) and recurses.
  template <class Includes>
  void scan(const Includes& includes, const std::vector<std::string>& own_dirs) {
    for (const auto& include : includes) {
      resolve(std::string_view(include), own_dirs);
    }
  }

  // Resolves the pre-included files: opened from the working folder first, then searched.
  void scan_pre_includes(const std::vector<std::string>& files, const std::string& cwd) {
    scan(files, std::vector<std::string>{cwd});
  }

  // Remembers what the source (`where` "") or a scanned file lists about include-test macros
  // (IncludeList), for resolve_test_macro_calls.
  void add_macros(std::string where, const IncludeList& list, std::vector<std::string> own_dirs) {
    sources_.push_back(
        {std::move(where), &list.test_macros, &list.forwards, &list.calls, std::move(own_dirs)});
  }

  // The calls of include-test macros, in every file scanned (IncludeList): a header name passed
  // to one is resolved as the `__has_include` of the file that passes it (from its folders),
  // an identifier passed to one is unresolvable, and so is every call of a macro that passes
  // one of several parameters to one. Repeated until no new file is scanned (a file found so may
  // define or call more of them).
  void resolve_test_macro_calls() {
    for (std::size_t done = 0; done != sources_.size();) {
      done = sources_.size();
      std::set<std::string, std::less<>> macros;
      std::vector<std::pair<std::string_view, std::string_view>> forwards;
      for (const MacroSource& source : sources_) {
        macros.insert(source.test_macros->begin(), source.test_macros->end());
        for (const std::string& forward : *source.forwards) {
          const std::size_t space = forward.find(' ');
          forwards.emplace_back(std::string_view(forward).substr(0, space),
                                std::string_view(forward).substr(space + 1));
        }
      }
      if (macros.empty()) return;      // the common case: nothing to resolve
      for (bool grew = true; grew;) {  // M tests what it passes to a test macro W
        grew = false;
        for (const auto& [macro, target] : forwards) {
          const std::string_view callee = target.substr(0, target.find(' '));
          if (!macros.contains(callee) || macros.contains(macro)) continue;
          if (target.ends_with(" *")) {
            unresolvable_.push_back("#define " + std::string(macro) + " passes a parameter to " +
                                    std::string(callee));
          }
          macros.emplace(macro);
          grew = true;
        }
      }
      test_macros_ = macros;
      for (std::size_t i = 0; i < done; ++i) {
        // Copies: resolve() appends to sources_.
        const std::vector<std::string>* calls = sources_[i].calls;
        const std::vector<std::string> own_dirs = sources_[i].own_dirs;
        const std::string where = sources_[i].where;
        for (const std::string& call : *calls) {
          const std::size_t space = call.find(' ');
          const std::string_view argument = std::string_view(call).substr(space + 1);
          if (!macros.contains(std::string_view(call).substr(0, space))) continue;
          if (argument.front() == '"' || argument.front() == '<') {
            resolve(argument.substr(1, argument.size() - 2), own_dirs);
          } else {
            unresolvable_.push_back(where + std::string(call.substr(0, space)) + "(" +
                                    std::string(argument) + ")");
          }
        }
      }
    }
  }

  // Records directives that name no literal header, prefixed with where they are.
  void add_unresolvable(const std::string& where, const std::vector<std::string>& directives) {
    for (const std::string& directive : directives) unresolvable_.push_back(where + directive);
  }

  // Every include-test macro the scan knew in the end (a call of any other name changed nothing).
  const std::set<std::string, std::less<>>& test_macros() const { return test_macros_; }

  // Every folder this scan asked about and every file it found, with what it saw (ScanWatch).
  ScanWatch::Looked looked() const {
    ScanWatch::Looked out;
    out.folders.reserve(folders_.size());
    for (const auto& [path, f] : folders_) out.folders.push_back({path, f.is_dir, f.st});
    for (const auto& [path, tried] : tried_) {
      if (tried) out.files.push_back({path, tried->st});
    }
    return out;
  }

  HeaderScan take() && {
    std::sort(out_.begin(), out_.end(), [](const HeaderDigest& a, const HeaderDigest& b) {
      if (a.include != b.include) {
        return a.include < b.include;
      }
      if (a.path != b.path) {
        return a.path < b.path;
      }
      if (a.resolved != b.resolved) {
        return a.resolved < b.resolved;
      }
      return a.content_hash < b.content_hash;
    });
    out_.erase(std::unique(out_.begin(), out_.end()), out_.end());
    std::sort(unresolvable_.begin(), unresolvable_.end());
    unresolvable_.erase(std::unique(unresolvable_.begin(), unresolvable_.end()),
                        unresolvable_.end());
    HeaderScan result;
    result.headers = std::move(out_);
    result.unresolvable = std::move(unresolvable_);
    return result;
  }

 private:
  // A name is resolved once per scan from the same folders (resolved_): every lookup it makes is
  // answered once per scan, so a repeat would only add the same digests again (CCCL's headers
  // include the same names from hundreds of files).
  void resolve(std::string_view include, const std::vector<std::string>& own_dirs) {
    std::string pair;
    for (const std::string& dir : own_dirs) {
      pair += dir;
      pair += '\n';
    }
    pair += '\0';
    pair += include;
    if (!resolved_.insert(std::move(pair)).second) {
      return;
    }
    bool any = false;
    if (include.empty() || include.find('\0') != std::string_view::npos) {
      // No file can have this name (NVRTC cannot open it either).
    } else if (include.front() == '/') {
      any = try_candidate(include, std::string(include));
    } else {
      // Every candidate folder, own folders first, each tried once.
      std::vector<const std::string*> dirs;
      dirs.reserve(own_dirs.size() + search_dirs_.size());
      const auto add = [&](const std::string& dir) {
        for (const std::string* seen : dirs) {
          if (*seen == dir) {
            return;
          }
        }
        dirs.push_back(&dir);
      };
      for (const std::string& dir : own_dirs) {
        add(dir);
      }
      for (const std::string& dir : search_dirs_) {
        add(dir);
      }
      const std::string_view first = include.substr(0, include.find('/'));
      for (const std::string* dir : dirs) {
        if (!may_hold(*dir, first)) {
          continue;
        }
        std::string candidate;
        candidate.reserve(dir->size() + 1 + include.size());
        candidate += *dir;
        if (candidate.back() != '/') {
          candidate += '/';
        }
        candidate += include;
        any = try_candidate(include, candidate) || any;
      }
    }
    if (!any) {
      HeaderDigest digest;
      digest.include = std::string(include);
      out_.push_back(std::move(digest));
      if (!toolkit_dirs_.empty() && !include.empty() && include.front() != '/') {
        toolkit_roots_.insert(std::string(include));
      }
    }
  }

  // What the scan knows of one folder, asked once per scan (as if the scan had looked at every
  // candidate at once): whether it is a folder and, for the folders candidates are looked up in
  // (include paths, the including files' folders), its names (null: it could not be listed).
  struct Folder {
    bool is_dir = false;
    struct stat st {};
    bool listed = false;
    std::shared_ptr<const NameSet> names;
    std::optional<std::string> canonical;  // realpath, once asked ("": it failed)
  };
  Folder& folder(const std::string& path, bool list = true) {
    auto [at, inserted] = folders_.try_emplace(path);
    Folder& f = at->second;
    if (inserted) f.is_dir = ::stat(path.c_str(), &f.st) == 0 && S_ISDIR(f.st.st_mode);
    if (list && f.is_dir && !f.listed) {
      f.listed = true;
      f.names = listing_of(path, f.st);
    }
    return f;
  }

  // Whether `folder` is a folder: a candidate in a folder that is not one cannot be a file (stat of
  // "F/x" fails where "F" is not a folder), so it costs no stat. Most candidates are such: a
  // header name looked up in every include path (CuPy's six for an mdspan program: 12,360 stats,
  // 8,267 of them failing, measured with strace).
  bool is_folder(const std::string& path) { return folder(path, false).is_dir; }

  // realpath of the folder `path` (a folder per is_folder), once per scan; "" if it failed.
  const std::string& canonical_folder(const std::string& path) {
    Folder& f = folder(path, false);
    if (!f.canonical) f.canonical = real_path(path);
    return *f.canonical;
  }

  // Whether a name whose first component is `first` ("cuda" of "cuda/std/mdspan") may exist in
  // `dir`: false if `dir` is not a folder or its listing cannot hold `first` (NameSet); true if it
  // could not be listed or `first` is "." or "..". Most lookups of CCCL's includes, from hundreds
  // of folders, end here, without a stat.
  bool may_hold(const std::string& dir, std::string_view first) {
    const Folder& f = folder(dir);
    if (!f.is_dir) return false;
    if (!f.names || first.empty() || first == "." || first == "..") return true;
    return f.names->may_contain(first);
  }

  // Records `candidate` if it is an existing regular file; returns whether it was.
  // A candidate is looked at once per scan (tried_), as if the scan had looked at every candidate
  // at once: CCCL's headers include the same names from hundreds of files (an mdspan program
  // through CuPy's folders: ~2,900 stats a key, most of them repeated).
  bool try_candidate(std::string_view include, const std::string& candidate) {
    auto [at, inserted] = tried_.try_emplace(candidate);
    if (inserted) {
      struct stat st {};
      Resolved found;
      const std::string dir = parent_of(candidate);
      if (is_folder(dir) && ::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
          resolve_file(
              candidate, st, [&]() -> const std::string& { return canonical_folder(dir); },
              found)) {
        at->second = Tried{std::move(found), static_cast<std::uint64_t>(st.st_dev),
                           static_cast<std::uint64_t>(st.st_ino), st};
      }
    }
    if (!at->second) {
      return false;
    }
    const Tried tried = *at->second;  // a copy: the recursion below adds to tried_
    Resolved file = tried.file;

    HeaderDigest digest;
    digest.include = std::string(include);
    digest.resolved = true;
    digest.content_hash = file.scan->content_hash;
    // Each file's includes are resolved once per call (this also breaks include cycles), from the
    // folder it was reached through and the folder it really lives in. A file reached again
    // through another symlinked folder is not rescanned from that folder.
    const bool first_visit =
        file.scan->lists_anything() && visited_.insert({tried.dev, tried.ino}).second;
    std::vector<std::string> own_dirs;
    if (first_visit) {
      own_dirs.push_back(parent_of(candidate));
      std::string real_parent = parent_of(file.canonical);
      if (real_parent != own_dirs.front()) {
        own_dirs.push_back(std::move(real_parent));
      }
    }
    if (first_visit) {
      add_unresolvable(file.canonical + ": ", file.scan->unresolvable);
      sources_.push_back({file.canonical + ": ", &file.scan->test_macros, &file.scan->forwards,
                          &file.scan->calls, own_dirs});
      scans_.push_back(file.scan);  // keeps the lists sources_ points to
    }
    digest.path = std::move(file.canonical);
    out_.push_back(std::move(digest));
    if (first_visit) {
      scan(file.scan->includes, own_dirs);
    }
    return true;
  }

  struct MacroSource {
    std::string where;  // "" for the source, "<file>: " for a header
    const std::vector<std::string>* test_macros;
    const std::vector<std::string>* forwards;
    const std::vector<std::string>* calls;
    std::vector<std::string> own_dirs;
  };

  std::vector<std::string> search_dirs_;
  std::vector<std::string> include_dirs_;  // search_dirs_ without the program's folder
  std::vector<std::string> toolkit_dirs_;
  std::set<std::string> toolkit_roots_;  // names found in no user folder
  std::vector<MacroSource> sources_;     // every file scanned, in order, and the source
  std::vector<std::shared_ptr<const FileScan>> scans_;
  std::set<std::pair<std::uint64_t, std::uint64_t>> visited_;  // (device, inode)
  std::unordered_map<std::string, Folder> folders_;            // folder()'s answers
  std::unordered_set<std::string> resolved_;  // resolve()'s (own folders, name) pairs
  struct Tried {
    Resolved file;
    std::uint64_t dev = 0;
    std::uint64_t ino = 0;
    struct stat st {};
  };
  std::unordered_map<std::string, std::optional<Tried>> tried_;  // try_candidate's files
  std::vector<HeaderDigest> out_;
  std::vector<std::string> unresolvable_;
  std::set<std::string, std::less<>> test_macros_;  // resolve_test_macro_calls's last set
};

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
  for (const auto* names : {&list.names, &list.unresolvable, &list.test_macros, &list.forwards}) {
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
  const IncludeList list = list_includes(source);
  const std::string memo_key = scan_memo_key(list, search);
  ScanWatch& watch = ScanWatch::process();
  if (std::optional<HeaderScan> memoized = watch.find(memo_key, list.calls)) {
    return *std::move(memoized);
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
  Scanner scanner(std::move(search_dirs), std::move(include_dirs), std::move(toolkit_dirs));
  if (!search.pre_includes.empty()) {
    scanner.scan_pre_includes(search.pre_includes, absolute_dir(std::filesystem::path(), cwd));
  }
  scanner.add_unresolvable("", list.unresolvable);
  scanner.add_macros("", list, {});
  scanner.scan(list.names, std::vector<std::string>{});
  scanner.scan_indirect();
  std::shared_ptr<ScanRecord> record;
  std::int64_t too_new_ns = ScanRecord::kTooNewNs;
  {
    Memo& m = memo();
    const std::lock_guard lock(m.mutex);
    record = m.record;
    too_new_ns = m.too_new_ns;
  }
  if (record) record->save();  // writes only if this scan read a file worth recording
  const ScanWatch::Looked looked = scanner.looked();
  const std::set<std::string, std::less<>> macros = scanner.test_macros();
  HeaderScan result = std::move(scanner).take();
  watch.remember(memo_key, result, macros, list.calls, looked, started_ns, too_new_ns);
  return result;
}

void set_toolkit_names_folder(const std::filesystem::path& folder, std::int64_t too_new_ns) {
  {
    NamesFolder& names = names_folder();
    const std::lock_guard lock(names.mutex);
    names.path = folder;
  }
  Memo& m = memo();
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
  Memo& m = memo();
  {
    const std::lock_guard lock(m.mutex);
    m.files.clear();
    m.candidates.clear();
    if (m.record) m.record = std::make_shared<ScanRecord>(m.record->file(), m.record->too_new_ns());
  }
  {
    auto& closures = memo_table<std::shared_ptr<const ToolkitNames>>();
    const std::lock_guard lock(closures.mutex);
    closures.known.clear();
  }
  auto& listings = memo_table<Listing>();
  const std::lock_guard lock(listings.mutex);
  listings.known.clear();
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

std::uint64_t header_files_read() { return memo().files_read.load(std::memory_order_relaxed); }

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
