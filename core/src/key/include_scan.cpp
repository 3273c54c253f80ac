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

#include "key/computed_includes.hpp"
#include "key/file_scans.hpp"
#include "key/folder_fingerprint.hpp"
#include "key/folder_listing.hpp"
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

// Stands for the program's name in what the scan says about the program's own lines ("<name>:"):
// a memoized scan serves programs of other names (named() puts the name in).
constexpr std::string_view kSourceMark = "\x02:";

// `scan` with kSourceMark replaced by `program_name` ("<program>" when empty).
HeaderScan named(HeaderScan scan, const std::string& program_name) {
  for (std::string& line : scan.unresolvable) {
    if (line.starts_with(kSourceMark)) {
      line.replace(0, kSourceMark.size() - 1, program_name.empty() ? "<program>" : program_name);
    }
  }
  return scan;
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

class Scanner {
 public:
  Scanner(std::vector<std::string> search_dirs, std::vector<std::string> include_dirs,
          std::vector<std::string> toolkit_dirs, const std::vector<std::string>& defines,
          std::string_view source)
      : search_dirs_(std::move(search_dirs)),
        include_dirs_(std::move(include_dirs)),
        toolkit_dirs_(std::move(toolkit_dirs)),
        computed_(defines),
        source_(source) {}

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

  // What the computed includes, the toolkit's headers and the include-test macros reach, until
  // none reaches a file or a definition more: a file found by one may define more macros, hold
  // more computed includes, call more test macros or include more toolkit headers.
  void scan_indirect() {
    for (std::size_t before = 0, now = 1; before != now;) {
      before = progress();
      resolve_computed_includes();
      resolve_test_macro_calls();
      scan_toolkit_names();
      now = progress();
    }
  }

  // Every computed include of every file scanned (IncludeList::computed), expanded over every
  // definition seen so far (computed_includes.hpp): each header name it can expand to is
  // resolved like a literal include of that file; one the expander cannot bound is covered by
  // the folder trees it could read (cover_trees).
  void resolve_computed_includes() {
    for (std::size_t done = 0; done != sources_.size();) {
      for (; defined_ < sources_.size(); ++defined_) {
        computed_.add_definitions(*sources_[defined_].defines);
      }
      done = sources_.size();
      for (std::size_t i = 0; i < done; ++i) {
        const std::vector<std::string>* sites = sources_[i].computed;
        const std::vector<std::string> own_dirs = sources_[i].own_dirs;  // resolve() appends
        const std::string where = sources_[i].where;
        for (const std::string& entry : *sites) {
          ComputedSite site;
          if (!parse_computed_site(entry, site)) continue;
          resolve_operand(site.operand, where + site.line + ": " + site.directive, own_dirs);
        }
      }
    }
  }

  // Resolves every header name `operand` can expand to (`what`: "<file>:<line>: <directive>",
  // for messages), or covers the trees it could read.
  void resolve_operand(const std::string& operand, const std::string& what,
                       const std::vector<std::string>& own_dirs) {
    const OperandNames names = computed_.expand(operand);  // a copy: resolve() may add more
    if (!names.unbounded.empty()) {
      cover_trees(what, names.unbounded, own_dirs);
      return;
    }
    for (const std::string& name : names.names) resolve(name, own_dirs);
  }

  // The tree fallback: a computed include `what` whose expansion is not bounded (`why`) may read
  // any file under the including file's folders and the search folders, so each of those trees'
  // fingerprints (folder_fingerprint.hpp) goes into the scan as a header "<folder tree>" at the
  // folder's path. A tree too large to fingerprint leaves the include unresolvable.
  void cover_trees(const std::string& what, const std::string& why,
                   const std::vector<std::string>& own_dirs) {
    covered_trees_ = true;
    std::vector<std::string> trees = own_dirs;
    trees.insert(trees.end(), search_dirs_.begin(), search_dirs_.end());
    for (const std::string& tree : trees) {
      if (!fingerprinted_.insert(tree).second) continue;
      const FolderTreeFingerprint fingerprint = fingerprint_folder_tree(tree);
      if (!fingerprint.ok) {
        unresolvable_.push_back(
            what + ": " + why + ", and the folder tree " + tree +
            " it could read from cannot be fingerprinted instead (" + fingerprint.why +
            "): give the header name literally, or keep that folder's tree smaller");
        continue;
      }
      HeaderDigest digest;
      digest.include = std::string(kFolderTreeInclude);
      digest.path = tree;
      digest.content_hash = fingerprint.hash;
      out_.push_back(std::move(digest));
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
    sources_.push_back({std::move(where), &list.test_macros, &list.forwards, &list.calls,
                        &list.defines, &list.computed, std::move(own_dirs)});
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
      struct Forward {
        std::string_view macro;
        std::string_view target;
        const MacroSource* source;
      };
      std::vector<Forward> forwards;
      for (const MacroSource& source : sources_) {
        macros.insert(source.test_macros->begin(), source.test_macros->end());
        for (const std::string& forward : *source.forwards) {
          const std::size_t space = forward.find(' ');
          forwards.push_back({std::string_view(forward).substr(0, space),
                              std::string_view(forward).substr(space + 1), &source});
        }
      }
      if (macros.empty()) return;      // the common case: nothing to resolve
      for (bool grew = true; grew;) {  // M tests what it passes to a test macro W
        grew = false;
        for (const auto& [macro, target, source] : forwards) {
          const std::string_view callee = target.substr(0, target.find(' '));
          if (!macros.contains(callee) || macros.contains(macro)) continue;
          if (target.ends_with(" *")) {
            unresolvable_.push_back(
                located(*source, "define " + std::string(macro)) + "#define " +
                std::string(macro) + ": passes one of several parameters to the include-test " +
                "macro " + std::string(callee) + ", which the scan does not follow to its callers");
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
        const MacroSource source = sources_[i];
        for (const std::string& call : *calls) {
          const std::size_t space = call.find(' ');
          const std::string_view macro = std::string_view(call).substr(0, space);
          const std::string_view argument = std::string_view(call).substr(space + 1);
          if (!macros.contains(macro)) continue;
          if (argument.front() == '"' || argument.front() == '<') {
            resolve(argument.substr(1, argument.size() - 2), own_dirs);
          } else if (argument != "?") {  // an identifier: a computed include test
            const std::string what =
                located(source, macro) + std::string(macro) + "(" + std::string(argument) + ")";
            resolve_operand(std::string(argument), what, own_dirs);
          } else {
            unresolvable_.push_back(located(source, macro) + std::string(macro) +
                                    "(...): an include-test macro called with arguments the "
                                    "scan does not read (pass one header name or one macro)");
          }
        }
      }
    }
  }

  // Records directives that name no literal header, prefixed with where they are.
  void add_unresolvable(const std::string& where, const std::vector<std::string>& directives) {
    for (const std::string& directive : directives) unresolvable_.push_back(where + directive);
  }

  // Every include-test macro the scan knew in the end and every name a computed include's
  // expansion looked up: a call or a definition of any other name in the source, or a `-D` of
  // one, changes nothing (memo_calls).
  std::set<std::string, std::less<>> memo_names() const {
    std::set<std::string, std::less<>> names = test_macros_;
    names.insert(computed_.consulted().begin(), computed_.consulted().end());
    return names;
  }

  // Whether a computed include was covered by folder tree fingerprints (cover_trees).
  bool covered_trees() const { return covered_trees_; }

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
      add_unresolvable(file.canonical + ":", file.scan->unresolvable);
      sources_.push_back({file.canonical + ":", &file.scan->test_macros, &file.scan->forwards,
                          &file.scan->calls, &file.scan->defines, &file.scan->computed,
                          own_dirs});
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
    std::string where;  // kSourceMark for the source, "<file>:" for a header
    const std::vector<std::string>* test_macros;
    const std::vector<std::string>* forwards;
    const std::vector<std::string>* calls;
    const std::vector<std::string>* defines;
    const std::vector<std::string>* computed;
    std::vector<std::string> own_dirs;
  };

  // "<where><line>: " for the first line of `source` where `word` appears: for messages only (a
  // file is read again; "?" when it is not found).
  std::string located(const MacroSource& source, std::string_view word) const {
    std::string text;
    if (source.where == kSourceMark) {
      text = std::string(source_);
    } else if (auto read = io::read_file(source.where.substr(0, source.where.size() - 1))) {
      text = std::move(*read);
    }
    const std::size_t at = text.find(word);
    const std::string line =
        at == std::string::npos
            ? std::string("?")
            : std::to_string(1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
    return source.where + line + ": ";
  }

  std::size_t progress() const {
    return visited_.size() + sources_.size() + toolkit_roots_.size() + computed_.definitions();
  }

  std::vector<std::string> search_dirs_;
  std::vector<std::string> include_dirs_;  // search_dirs_ without the program's folder
  std::vector<std::string> toolkit_dirs_;
  ComputedIncludes computed_;
  std::string_view source_;
  std::size_t defined_ = 0;              // sources_ whose definitions computed_ has
  bool covered_trees_ = false;           // cover_trees ran
  std::set<std::string> fingerprinted_;  // cover_trees's folders
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
  const IncludeList list = list_includes(source);
  const std::string memo_key = scan_memo_key(list, search);
  const std::vector<std::string> calls = memo_calls(list, search);
  ScanWatch& watch = ScanWatch::process();
  if (std::optional<HeaderScan> memoized = watch.find(memo_key, calls)) {
    return named(*std::move(memoized), search.program_name);
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
  HeaderScan result = std::move(scanner).take();
  // A tree fallback's files are not watched: such a scan is made again every time.
  if (!covered_trees) watch.remember(memo_key, result, macros, calls, looked, started_ns, too_new_ns);
  return named(std::move(result), search.program_name);
}

void set_toolkit_names_folder(const std::filesystem::path& folder, std::int64_t too_new_ns) {
  set_toolkit_names_path(folder);
  ScanMemo& m = scan_memo();
  const std::lock_guard lock(m.mutex);
  m.too_new_ns = too_new_ns;
  if (folder.empty()) {
    m.record = nullptr;
  } else if (!m.record || m.record->file() != folder / kScanRecordName ||
             m.record->too_new_ns() != too_new_ns) {
    m.record = std::make_shared<ScanRecord>(folder / kScanRecordName, too_new_ns);
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
