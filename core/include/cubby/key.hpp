// Key derivation: a pure function of labelled, length-prefixed fields (XXH3-128).
// No NVRTC call and no file access happen in `derive_key` or `list_includes`; `scan_includes`
// (and `scan_headers`) read headers.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/error.hpp"
#include "cubby/export.h"

namespace cubby {

// A 128-bit key. Text form: 32 lowercase hex digits.
struct CUBBY_API Key {
  std::array<std::uint8_t, 16> bytes{};

  std::string hex() const;
  // Parses 32 hex digits (either case); invalid_argument otherwise.
  static Result<Key> parse(std::string_view hex);
  friend bool operator==(const Key&, const Key&) = default;
  friend auto operator<=>(const Key&, const Key&) = default;
};

// One `#include` reached from the source. `resolved` false means no file was found for it in the
// user search path (toolkit headers such as <cuda/std/mdspan> are covered by the NVRTC identity).
struct HeaderDigest {
  std::string include;  // as spelled in the directive, e.g. "detail/ops.cuh"
  std::string path;     // the file it resolved to (absolute, normal form); empty if unresolved
  bool resolved = false;
  std::array<std::uint8_t, 16> content_hash{};  // XXH3-128 of the file's bytes; zero if unresolved

  friend bool operator==(const HeaderDigest&, const HeaderDigest&) = default;
};

// Everything a key depends on. `derive_key` sorts and de-duplicates name expressions itself.
struct KeyInputs {
  std::uint32_t format_version = 0;  // entry format version (kEntryFormatVersion)
  std::string nvrtc_version;         // "13.0"
  std::string nvrtc_identity;        // identity of the NVRTC library file (see nvrtc.hpp)
  std::string arch;                  // "sm_90", "sm_90a", "compute_90", kept verbatim
  std::vector<std::string> options;  // in the order given
  std::string source;                // program text
  std::string program_name;          // NVRTC program name
  std::vector<std::string> name_expressions;
  std::vector<HeaderDigest> headers;  // from scan_includes, in its (deterministic) order
  // Not hashed. Directives the scan could not resolve to a header name (HeaderScan::unresolvable):
  // when any is present the key does not cover every header the program may read, so callers
  // must not look up or store an entry under it (Cache compiles such a program uncached).
  std::vector<std::string> unresolvable;
};

// One labelled field of a key and the hash of its encoded bytes, for `cubby compile --explain`.
struct KeyField {
  std::string label;    // "arch", "option[2]", "header[detail/ops.cuh]", ...
  std::string summary;  // short human-readable value (truncated source, path, ...)
  std::string hash;     // 32 hex digits of XXH3-128 over the field's encoding
};

// The key of `inputs`. Pure: same inputs, same key, on every machine and in every process.
CUBBY_API Key derive_key(const KeyInputs& inputs);

// What stands for the base folder in key inputs after relativize_paths.
inline constexpr std::string_view kBaseDirMarker = "${CUBBY_BASE_DIR}";

// Rewrites the paths of `inputs` that lie under `base_dir` (absolute, normalized) as
// "${CUBBY_BASE_DIR}/<relative path>": the resolved paths of headers, the program name, and
// options where a path starts (the whole option, after "-I", or after the first '='). A path
// only counts as under the base when the base is followed by '/' or ends it ("/src/repo2" is not
// under "/src/repo"). Two checkouts of a project in different folders, each with its own base,
// then give the same key. Nothing outside the key changes: NVRTC still sees the real paths.
CUBBY_API void relativize_paths(KeyInputs& inputs, const std::filesystem::path& base_dir);

// The fields `derive_key` hashes, each with its own hash, in hashing order.
CUBBY_API std::vector<KeyField> explain_key(const KeyInputs& inputs);

// NVRTC's include options, parsed as NVRTC 13 parses them (checked by compiling): the one parser
// that key derivation and compile share. Spellings: include path `-I DIR`, `-IDIR`, `-I=DIR`,
// `--include-path DIR`, `--include-path=DIR`; pre-include `-include F`, `-include=F`,
// `--pre-include F`, `--pre-include=F`; `-no-source-include` / `--no-source-include`. The value
// of an option that takes a separate value (`-D X`, `-Xptxas -v`, ...) is never read as an
// option. A trailing `-I` or `-include` with no value is passed on unchanged (NVRTC rejects it).
struct IncludeOptions {
  std::vector<std::string> include_paths;  // in order
  std::vector<std::string> pre_includes;   // in order
  bool no_source_include = false;
  // The options in order, each include option in one spelling (`--include-path=DIR`,
  // `--pre-include=F`), all others verbatim: what compile passes to NVRTC, so that NVRTC reads
  // exactly the folders and files the key scanned.
  std::vector<std::string> nvrtc_options;
};
IncludeOptions parse_include_options(const std::vector<std::string>& options);

// parse_include_options(options).include_paths as paths.
std::vector<std::filesystem::path> include_paths_from_options(
    const std::vector<std::string>& options);

// Where NVRTC looks for the headers of one program (built by `plan_includes` in nvrtc.hpp).
// NVRTC 13's order, checked by compiling: a quoted include is looked up in the including file's
// folder (for the program itself: the folder of the program name, taken from the working folder;
// neither with -no-source-include), then in the include paths in order, then the toolkit's
// folders; an angled one in the include paths, then the toolkit. A pre-included file is opened
// from the working folder first, then searched in the include paths. Folders of the include
// stack are not searched.
struct IncludeSearch {
  std::filesystem::path program_dir;  // the program name's folder; empty: not searched
  std::vector<std::filesystem::path> include_paths;  // user folders, in order (no toolkit folder)
  std::vector<std::string> pre_includes;             // files, in order
};

// The include directives of one text, found after translation phases 1-3 as NVRTC 13 applies
// them: phase 1 (trigraphs: both readings are taken, as NVRTC replaces them in C++03/11/14 only),
// phase 2 (a backslash directly followed by LF or CR LF splices lines, inside directives and
// names too), phase 3 (comments are blanks, a block comment may span lines: `/**/#include`,
// `# /*x*/ include`, a multi-line comment ending on the directive's line; string, character and
// raw string literals are skipped so that "/*" inside them opens nothing). A directive starts
// with `#` or the digraph `%:` first on its line. `#include`, `#include_next` and
// `__has_include(...)` (whose answer changes the program too) count, also inside `#if 0` blocks
// (a safe over-approximation).
struct IncludeList {
  std::vector<std::string> names;  // header names as spelled between the quotes or angles
  // Directives whose operand is not a literal header name (`#include H`, `#include M(x)`),
  // spelled as found: no scan can know which file they read without a preprocessor.
  std::vector<std::string> unresolvable;
};
// Pure (no file access); both lists sorted and de-duplicated.
IncludeList list_includes(std::string_view text);

// What a header scan found. `unresolvable` non-empty means the program may read a header the
// scan cannot name (`#include MACRO`, in the source or any header scanned, "<file>: " before
// directives of headers): then no key can be trusted. cubby's choice, made once here: such a
// program is compiled without the store (a warning says so, once per process), never cached
// under a partial key. Hashing every file under the search folders was rejected: the program's
// folder is often the working folder, unbounded in size and unrelated to the program.
struct HeaderScan {
  std::vector<HeaderDigest> headers;
  std::vector<std::string> unresolvable;
};

// Every header `source` can reach through its include directives (and `search.pre_includes`),
// recursively, over-approximating NVRTC's search (see IncludeSearch): for each header name every
// existing file among the including file's folder, `program_dir` and the include paths is
// recorded and scanned (pre-included files also from the working folder), so a header that
// shadows another, or that appears later in an earlier folder, changes the result. A header
// found nowhere is recorded unresolved (toolkit headers are covered by the NVRTC identity).
// Headers sorted by (include, path) and de-duplicated. Memoized per process by path, identity,
// size, mtime and ctime. Never misses a header reachable through a literal header name.
HeaderScan scan_includes(std::string_view source, const IncludeSearch& search);

// scan_includes(source, {source_dir, include_paths, {}}).headers (an empty `source_dir` is not
// searched).
std::vector<HeaderDigest> scan_headers(std::string_view source,
                                       const std::filesystem::path& source_dir,
                                       const std::vector<std::filesystem::path>& include_paths);

// XXH3-128 of `bytes` (used for checksums and content hashes).
std::array<std::uint8_t, 16> hash128(std::string_view bytes);

}  // namespace cubby
