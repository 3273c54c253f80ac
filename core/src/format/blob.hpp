// Blobs: opaque payloads another tool compiled (CuPy's kernel cache, ...), kept in the store byte
// for byte under (namespace, name). A blob is an ordinary entry of kind `blob` with no lowered
// names, so it is bounded, checked and shared like every other entry.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cubby/entry.hpp"
#include "cubby/key.hpp"

namespace cubby {

// The key of blob `name` in `ns`: XXH3-128 over a domain tag and both strings, length-prefixed,
// so it never equals a compile key nor the key of another (namespace, name). Pure.
Key blob_key(std::string_view ns, std::string_view name);

// The entry that stores `payload` as blob `name` of `ns`; `compile_us` is what producing it cost
// (0 if unknown). Its options record "namespace=<ns>" and "name=<name>" for `cubby ls`/`show`.
Entry blob_entry(std::string_view ns, std::string_view name, std::string_view payload,
                 std::uint64_t compile_us);

// Whether `entry` is blob `name` of `ns` (kind and both recorded options match).
bool is_blob_of(const Entry& entry, std::string_view ns, std::string_view name);

// The namespace an entry belongs to: kProgramsNamespace for compiled programs (cubin, ptx, ltoir),
// a blob's own namespace (e.g. "cupy") for a blob. `cubby ls` shows it, `cubby clear --namespace`
// selects by it.
inline constexpr std::string_view kProgramsNamespace = "programs";
std::string entry_namespace(const Entry& entry);
// A blob's name (its "name=" option), empty for a program.
std::string blob_name(const Entry& entry);

// invalid_argument unless `ns` is 1..255 characters of [A-Za-z0-9._-] (kProgramsNamespace is one).
Result<void> check_namespace(std::string_view ns);
// check_namespace(ns), and invalid_argument unless `name` is non-empty.
Result<void> check_blob_name(std::string_view ns, std::string_view name);

}  // namespace cubby
