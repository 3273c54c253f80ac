// The header scan that feeds a key: which headers a program can read, found without a
// preprocessor (NVRTC has no dependency output), conservative by construction.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/key.hpp"
#include "cuda/include_search.hpp"
#include "key/include_lexer.hpp"
#include "key/scan_record.hpp"

namespace cubby {

class ScanPlace;  // scan_place.hpp

// What a header scan found. `headers`: every header the program can read (HeaderDigest), and
// for a computed include the scan could not bound, one digest per folder tree it could read from
// (include kFolderTreeInclude, path the folder, content_hash the tree's fingerprint:
// folder_fingerprint.hpp). `unresolvable` non-empty means the program may read a header the scan
// cannot name; each is spelled "<file>:<line>: <directive>: <why>" (the program's own lines under
// IncludeSearch::program_name, "<program>" when empty): then no key can be trusted, and the
// program is compiled without the store (a warning says so, once per process), never cached
// under a partial key. What remains so: a computed include whose expansion is not bounded and
// whose folder trees are too large to fingerprint, `__has_include` named without a call, and an
// include test built from several parameters of a #define.
inline constexpr std::string_view kFolderTreeInclude = "<folder tree>";

struct HeaderScan {
  std::vector<HeaderDigest> headers;
  std::vector<std::string> unresolvable;
};

// Every header `source` can reach through its include directives (and `search.pre_includes`),
// recursively, over-approximating NVRTC's search (see IncludeSearch): for each header name every
// existing file among the including file's folder, `program_dir` and the include paths is
// recorded and scanned (pre-included files also from the working folder), so a header that
// shadows another, or that appears later in an earlier folder, changes the result. A header
// found nowhere is recorded unresolved (toolkit headers are covered by KeyInputs::toolkit_headers).
// Such a header is then looked up in `search.toolkit_dirs`, and every name the toolkit headers it
// reaches include (or probe with __has_include) is looked up in the include paths (NVRTC does not
// search `program_dir` for them): each existing file is recorded and scanned like a header of the
// program (absence is the default: a file that appears there changes the result). The toolkit
// part is memoized per process (the toolkit does not change under a process: see
// toolkit_headers.hpp) and skipped while every include path is empty or missing; the lookups in
// the include paths cost one stat per folder while it is unchanged (its names are memoized).
// Headers sorted by (include, path) and de-duplicated. Each file's part memoized per process by
// path, identity, size, mtime and ctime; the whole scan memoized per process while the kernel
// reports no change to anything it looked at (ScanWatch, scan_watch.hpp; CUBBY_SCAN_WATCH=0: off).
// `place` keeps what the scan learns between processes (scan_place.hpp: the toolkit's names, the
// scan record of files, the book of whole scans): a fresh process asks the book for a scan of the
// same include set and uses it if everything it looked at is still so (ScanWatch::still_true, as
// the memo's second look), else scans; a scan the memo of whole scans could remember is booked.
// Never misses a header reachable through a literal header name. The header names passed to
// include-test macros (IncludeList::test_macros: CCCL's
// `_CCCL_HAS_INCLUDE(<x>)`), wherever defined among the files scanned, count as a
// `__has_include` of the file passing them.
// Computed includes (`#include MACRO`, `__has_include(MACRO)`, a test macro passed a macro) are
// keyed, not given up on: each operand is expanded over the union of every definition in the
// source, the headers scanned, `search.defines` and NVRTC's fixed predefined macros
// (macro_expand.hpp: every alternative, a macro also left as it is), and each header name it can
// expand to is resolved like a literal include of the file holding it; new files bring new
// definitions and computed includes, up to a fixpoint. An expansion the expander cannot bound
// (recursion, too many alternatives, a name built from __FILE__ or __CUDA_ARCH__) is covered by the
// fingerprints of the folder trees it could read from (the including file's folders and the search
// folders): such a scan is not memoized whole. A name the definitions cannot make is not read by
// NVRTC either (or NVRTC fails on it). Known limit: the toolkit's own headers are followed by
// their literal includes only (their computed ones read toolkit headers, which
// KeyInputs::toolkit_headers covers).
HeaderScan scan_includes(std::string_view source, const IncludeSearch& search,
                         const ScanPlace& place);
HeaderScan scan_includes(std::string_view source, const IncludeSearch& search);  // nothing kept
// scan_includes without a copy: a scan answered from the memo is shared with it (immutable).
std::shared_ptr<const HeaderScan> scan_includes_shared(std::string_view source,
                                                       const IncludeSearch& search,
                                                       const ScanPlace& place);

// Forgets every per-process memo of the scan (files, candidates, folder listings, toolkit names,
// whole scans), as in a fresh process (with a new ScanPlace: a place's record is read once); the
// files a place keeps stay. For tests and benchmarks.
void forget_header_scans();

// The folder part of `path` as the scan names folders: "/" for an entry of the root, "." for a
// name without a slash; text only (no file system access, no normalization).
std::string parent_of(std::string_view path);

// How many header files this process has read (and lexed and hashed) for scans: a diagnostic for
// tests and benchmarks.
std::uint64_t header_files_read();

// How many scans this process answered from its memo of whole scans (scan_watch.hpp): a
// diagnostic for tests and benchmarks.
std::uint64_t header_scans_memoized();

// How many scans this process answered from a place's book of whole scans (scan_book.hpp): a
// diagnostic for tests and benchmarks.
std::uint64_t header_scans_booked();

// Whether the file at `path` (a resolved HeaderDigest's, not relativized) may hold other bytes than
// the ones hashed to `content_hash`: it cannot be read whole, its bytes hash otherwise, or its
// ctime is after `since_ns` (CLOCK_REALTIME nanoseconds taken before the scan that produced the
// hash: ccache's "too new" rule, which also catches a rewrite that was undone or kept its size and
// time stamps). Reads the file (no memo): for the check after a compile, not for keys.
bool header_changed_since(const std::string& path, const std::array<std::uint8_t, 16>& content_hash,
                          std::int64_t since_ns);

// scan_includes(source, {source_dir, include_paths, {}}).headers (an empty `source_dir` is not
// searched).
std::vector<HeaderDigest> scan_headers(std::string_view source,
                                       const std::filesystem::path& source_dir,
                                       const std::vector<std::filesystem::path>& include_paths);
std::vector<HeaderDigest> scan_headers(std::string_view source,
                                       const std::filesystem::path& source_dir,
                                       const std::vector<std::filesystem::path>& include_paths,
                                       const ScanPlace& place);

}  // namespace cubby
