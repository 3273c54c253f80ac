// Key derivation: a pure function of labelled, length-prefixed fields (XXH3-128). No NVRTC call
// and no file access happen in `derive_key`; the inputs' header digests come from the header
// scan (core/src/key/include_scan.hpp), the request -> inputs policy from
// core/src/cache/key_inputs.hpp.
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
// user search path (toolkit headers such as <cuda/std/mdspan> are covered by toolkit_headers).
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
  std::string toolkit_headers;       // identity of the toolkit's include folder, which ships
                                     // apart from libnvrtc (key/toolkit_headers.hpp)
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

// What the key hashes for a header list: XXH3-128 of its count and each header, in order.
using HeadersDigest = std::array<std::uint8_t, 16>;
CUBBY_API HeadersDigest headers_digest(const std::vector<HeaderDigest>& headers);
// derive_key(inputs) with `digest` standing for headers_digest(inputs.headers) (`inputs.headers`
// is not read): for a caller that keys many programs over one header list (cubby's Cache does).
CUBBY_API Key derive_key(const KeyInputs& inputs, const HeadersDigest& digest);

// What stands for the base folder in key inputs after relativize_paths.
inline constexpr std::string_view kBaseDirMarker = "${CUBBY_BASE_DIR}";

// Rewrites the paths of `inputs` that lie under `base_dir` (absolute, normalized) as
// "${CUBBY_BASE_DIR}/<relative path>": the resolved paths of headers, the program name, and
// options where a path starts (the whole option, after "-I", or after the first '='). A path
// only counts as under the base when the base is followed by '/' or ends it ("/src/repo2" is not
// under "/src/repo"). Two checkouts of a project in different folders, each with its own base,
// then give the same key. Nothing outside the key changes: NVRTC still sees the real paths.
CUBBY_API void relativize_paths(KeyInputs& inputs, const std::filesystem::path& base_dir);

// The fields `derive_key` hashes, each with its own hash, in hashing order, then the headers the
// "headers" field's digest is made of, one field each ("header[<include>]"). A header found in no
// user include path (an unresolved one: <cuda/std/...> and the other toolkit headers) has the
// summary kToolkitHeaderSummary: the toolkit_headers field covers it.
CUBBY_API std::vector<KeyField> explain_key(const KeyInputs& inputs);

inline constexpr std::string_view kToolkitHeaderSummary = "toolkit (covered by the NVRTC identity)";

// The one text layout of a key dump, shared by `cubby compile --explain`, the GoogleTest harness's
// and the pytest plugin's require-warm failures (through cubby_explain_text): a title line
// "key fields (label, hash, value):", then one line per field, "  <label>  <hash>  <summary>",
// labels padded to one column (at most kKeyDumpLabelWidth wide), hashes cut to their first
// kKeyDumpHashDigits digits. Ends with a newline.
inline constexpr std::size_t kKeyDumpLabelWidth = 40;
inline constexpr std::size_t kKeyDumpHashDigits = 12;
CUBBY_API std::string format_key_fields(const std::vector<KeyField>& fields);

}  // namespace cubby
