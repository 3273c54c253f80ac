// One header scan's walk (include_scan.hpp's scan_includes): the literal include graph over
// NVRTC's search order (header_scanner.cpp) and what reaches past it, to a fixpoint: computed
// includes, include-test macro calls and the toolkit's names (indirect_includes.cpp). One object
// per scan; not thread-safe.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cubby/key.hpp"
#include "key/computed_includes.hpp"
#include "key/file_scans.hpp"
#include "key/folder_listing.hpp"
#include "key/include_lexer.hpp"
#include "key/include_scan.hpp"
#include "key/scan_place.hpp"
#include "key/scan_watch.hpp"

namespace cubby {

// Stands for the program's name in what the scan says about the program's own lines ("<name>:"):
// a memoized scan serves programs of other names (named() puts the name in).
inline constexpr std::string_view kSourceMark = "\x02:";

class Scanner {
 public:
  // `place`: where the files' scans and the toolkit's names are kept between processes.
  Scanner(std::vector<std::string> search_dirs, std::vector<std::string> include_dirs,
          std::vector<std::string> toolkit_dirs, const std::vector<std::string>& defines,
          std::string_view source, const ScanPlace& place)
      : place_(place),
        search_dirs_(std::move(search_dirs)),
        include_dirs_(std::move(include_dirs)),
        toolkit_dirs_(std::move(toolkit_dirs)),
        computed_(defines),
        source_(source) {}

  // Looks every name the toolkit headers reached so far include up in the user's include paths
  // (NVRTC searches them before the toolkit; the program's folder only for the program's own
  // quoted includes), recording and scanning each existing file; repeated until no new toolkit
  // header is reached (a user file found so may include more). Nothing to do (and no toolkit
  // header read) while every include path is empty or missing.
  void scan_toolkit_names();

  // What the computed includes, the toolkit's headers and the include-test macros reach, until
  // none reaches a file or a definition more: a file found by one may define more macros, hold
  // more computed includes, call more test macros or include more toolkit headers.
  void scan_indirect();

  // Every computed include of every file scanned (IncludeList::computed), expanded over every
  // definition seen so far (computed_includes.hpp): each header name it can expand to is
  // resolved like a literal include of that file; one the expander cannot bound is covered by
  // the folder trees it could read (cover_trees).
  void resolve_computed_includes();

  // Resolves every header name `operand` can expand to (`what`: "<file>:<line>: <directive>",
  // for messages), or covers the trees it could read.
  void resolve_operand(const std::string& operand, const std::string& what,
                       const std::vector<std::string>& own_dirs);

  // The tree fallback: a computed include `what` whose expansion is not bounded (`why`) may read
  // any file under the including file's folders and the search folders, so each of those trees'
  // fingerprints (folder_fingerprint.hpp) goes into the scan as a header "<folder tree>" at the
  // folder's path. A tree too large to fingerprint leaves the include unresolvable.
  void cover_trees(const std::string& what, const std::string& why,
                   const std::vector<std::string>& own_dirs);

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
  void resolve_test_macro_calls();

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
  ScanWatch::Looked looked() const;

  HeaderScan take() &&;

 private:
  // A name is resolved once per scan from the same folders (resolved_): every lookup it makes is
  // answered once per scan, so a repeat would only add the same digests again (CCCL's headers
  // include the same names from hundreds of files). Whether it names an existing file in the
  // folders searched (the toolkit's are not looked at: in_toolkit).
  bool resolve(std::string_view include, const std::vector<std::string>& own_dirs);
  // Whether `include` (relative) names a file in one of the toolkit's include folders (asked for
  // a computed include no searched folder answered, resolve_operand).
  bool in_toolkit(std::string_view include) const;

  // What the scan knows of one folder, asked once per scan (as if the scan had looked at every
  // candidate at once): whether it is a folder and, for the folders candidates are looked up in
  // (include paths, the including files' folders), its names (null: it could not be listed).
  struct Folder {
    bool is_dir = false;
    struct stat st {};
    bool listed = false;
    std::shared_ptr<const NameSet> names;
    std::optional<std::string> canonical;  // realpath, once asked ("": it failed)
    // The first components may_hold answered from `names`, with the answer (ScanWatch re-checks
    // and watches these names only: another entry of the folder changes nothing).
    std::map<std::string, bool, std::less<>> asked;
    bool every_name = false;  // the scan relied on the folder being empty: every entry counts
  };
  Folder& folder(const std::string& path, bool list = true);

  // Whether `folder` is a folder: a candidate in a folder that is not one cannot be a file (stat of
  // "F/x" fails where "F" is not a folder), so it costs no stat. Most candidates are such: a
  // header name looked up in every include path (CuPy's six for an mdspan program: 12,360 stats,
  // 8,267 of them failing, measured with strace).
  bool is_folder(const std::string& path) { return folder(path, false).is_dir; }

  // realpath of the folder `path` (a folder per is_folder), once per scan; "" if it failed.
  const std::string& canonical_folder(const std::string& path);

  // Whether a name whose first component is `first` ("cuda" of "cuda/std/mdspan") may exist in
  // `dir`: false if `dir` is not a folder or its listing cannot hold `first` (NameSet); true if it
  // could not be listed or `first` is "." or "..". Most lookups of CCCL's includes, from hundreds
  // of folders, end here, without a stat.
  bool may_hold(const std::string& dir, std::string_view first);

  // Records `candidate` if it is an existing regular file; returns whether it was.
  // A candidate is looked at once per scan (tried_), as if the scan had looked at every candidate
  // at once: CCCL's headers include the same names from hundreds of files (an mdspan program
  // through CuPy's folders: ~2,900 stats a key, most of them repeated).
  bool try_candidate(std::string_view include, const std::string& candidate);

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
  std::string located(const MacroSource& source, std::string_view word) const;

  std::size_t progress() const {
    return visited_.size() + sources_.size() + toolkit_roots_.size() + computed_.definitions();
  }

  const ScanPlace& place_;
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
  std::unordered_map<std::string, bool> resolved_;  // resolve()'s (own folders, name) pairs
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

}  // namespace cubby
