// Entry verification, offline (no driver, no NVRTC): what `cubby verify` and `cubby import` check.
//
// An entry verifies when it decodes as the entry of the key it is stored under (magic, version,
// kind, checksum, exact length, key; see entry.hpp) and every lowered name it stores is a symbol
// of its own payload (the CUBIN's ELF symbol table,
// or the PTX / LTO-IR text). It is checked against itself only: anonymous-namespace names differ
// between compiles, so two compiles of one key never compare equal.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "cubby/entry.hpp"
#include "cubby/error.hpp"
#include "storage/local/disk.hpp"

namespace cubby {

// Every lowered name of `entry` is a symbol of its payload; Errc::corrupt naming the first that is
// not (or why the CUBIN does not parse).
Result<void> verify_entry_symbols(const Entry& entry);

// decode_entry(bytes, key) + verify_entry_symbols. Pure. An entry of another format version
// (entry_format, entry.hpp) fails with decode_entry's Errc::not_found: valid for another cubby
// release, so callers leave it alone, never count it bad or remove it.
Result<Entry> verify_entry(std::string_view bytes, const Key& key);

// verify_entry_symbols, then the name cross-check (check_entry_names, recover.hpp): no stored
// name may be one that cubby's matcher resolves the expression to a different symbol of the
// CUBIN. Errc::corrupt naming each disagreement. Costs a name recovery per entry: for
// `cubby verify`, not for the cache's hit path (which uses verify_entry_symbols).
Result<void> verify_entry_names(const Entry& entry);

// What verify_store checks of each entry.
enum class VerifyDepth : std::uint8_t {
  symbols,  // decode + verify_entry_symbols
  names,    // decode + verify_entry_names (what `cubby verify` runs)
};

struct VerifyReport {
  std::uint64_t entries = 0;  // entry files checked
  std::uint64_t bad = 0;      // failed verification, could not be read, or not a regular file
  std::uint64_t newer = 0;    // of a newer format version: skipped, kept
  std::uint64_t older = 0;    // of an older format version: skipped, kept (gc evicts them)
  std::uint64_t removed = 0;  // bad entries removed (with fix)
};

// Verifies every entry of the store; calls `on_bad(info, why)` for each bad one and, with `fix`,
// removes it. A non-regular file at an entry path (a link, never followed; a FIFO, never read)
// is a bad entry. Errc::io if the store cannot be listed.
Result<VerifyReport> verify_store(
    DiskTier& disk, bool fix,
    const std::function<void(const DiskEntryInfo&, const std::string&)>& on_bad,
    VerifyDepth depth = VerifyDepth::symbols);

}  // namespace cubby
