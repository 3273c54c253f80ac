// Recovery of lowered (mangled) names from a module's symbols, for CUBINs that carry no name
// map, and the cross-check of an entry's stored map against what its CUBIN contains.
//
// Symbols are enumerated offline from the CUBIN's ELF symbol table (kernels and variables; see
// cubin.hpp) or, on a GPU, from the loaded module through the driver (kernels only; see
// driver.hpp, enumerate_kernels). Each is demangled and matched structurally against the name
// expression (name_match.hpp): an expression resolves only to a single best match; otherwise it
// is unresolved with the reason. A wrong match is never acceptable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/cubin.hpp"
#include "cubby/demangle.hpp"
#include "cubby/entry.hpp"
#include "cubby/error.hpp"
#include "cubby/export.h"

namespace cubby {

// One kernel or variable of a module.
struct ModuleSymbol {
  std::string mangled;
  std::string demangled;  // empty when the demangler rejected it (then `note` says why)
  bool variable = false;
  std::uint64_t size = 0;  // variables: bytes
  std::string note;
};

// Every kernel and variable of `symbols`, demangled (kernels first, each group sorted).
CUBBY_API std::vector<ModuleSymbol> list_module_symbols(const CubinSymbols& symbols,
                                                        Demangler demangler = Demangler::cxa);

// The answer for one name expression.
struct RecoveredName {
  std::string expression;
  bool resolved = false;
  std::string mangled;    // when resolved
  std::string demangled;  // when resolved and asked for (RecoveredText::demangled)
  bool variable = false;  // when resolved: a __device__ variable
  int inexactness = 0;    // when resolved: canonicalisation steps (0: literal match)
  std::string reason;     // when unresolved: why, and what to do
};

// Whether recover_names fills RecoveredName::demangled (one demangler call per resolved name;
// callers that need only the lowered names skip it).
enum class RecoveredText : std::uint8_t { demangled, mangled_only };

// Recovers the lowered name of each expression (in order) from the kernels and variables of
// `symbols`. Only symbols that can carry an expression's base name are considered; with the cxa
// demangler they are parsed straight from their mangled form (mangled_name.hpp), falling back to
// demangling for symbols outside its subset. Never throws; an expression that does not parse is
// unresolved with the parse error as reason.
CUBBY_API std::vector<RecoveredName> recover_names(const CubinSymbols& symbols,
                                                   const std::vector<std::string>& expressions,
                                                   Demangler demangler = Demangler::cxa,
                                                   RecoveredText text = RecoveredText::demangled);

// The same from CUBIN bytes: Errc::corrupt (from read_cubin_symbols) when they are not a CUBIN.
CUBBY_API Result<std::vector<RecoveredName>> recover_names(
    std::string_view cubin, const std::vector<std::string>& expressions,
    Demangler demangler = Demangler::cxa, RecoveredText text = RecoveredText::demangled);

// Fills `entry.lowered_names` for `expressions` the entry lacks, from its CUBIN. Returns the
// per-expression answers; expressions left unresolved are not added. invalid_argument for a
// payload that is not a CUBIN (PTX and LTO-IR carry no symbol table to enumerate).
CUBBY_API Result<std::vector<RecoveredName>> recover_entry_names(
    Entry& entry, const std::vector<std::string>& expressions);

// The cross-check of one stored name.
struct NameCheck {
  enum class Status : std::uint8_t {
    ok,          // stored symbol is in the CUBIN and the matcher picks the same one
    unverified,  // stored symbol is in the CUBIN; the matcher cannot resolve the expression
                 // (typedefs, anonymous namespaces, ...), so nothing contradicts it
    missing,     // stored symbol is not a kernel or variable of the CUBIN: the entry is bad
    mismatch,    // the matcher resolves the expression to another symbol: the entry is bad
  };
  std::string expression;
  std::string stored;
  Status status = Status::ok;
  std::string detail;  // for unverified / missing / mismatch: why
};

// "ok", "unverified", "missing", "mismatch".
CUBBY_API const char* name_check_status_name(NameCheck::Status status) noexcept;

// All stored names of an entry, checked against its own CUBIN.
struct EntryNameReport {
  std::vector<NameCheck> checks;
  std::size_t kernels = 0;    // kernels the CUBIN has
  std::size_t variables = 0;  // variables the CUBIN has
  // True when no check is missing or mismatch.
  bool ok() const;
  // One sentence per bad check ("`ns::k<int>` is stored as `_Z...`, which ..."), empty when ok().
  std::string problems() const;
};

// Cross-checks `entry.lowered_names` against enumeration of its CUBIN. PTX and LTO-IR entries
// are reported with no checks (nothing to enumerate). Errc::corrupt when a CUBIN payload is not
// a readable ELF (the entry is bad). Pure: no driver, no NVRTC.
CUBBY_API Result<EntryNameReport> check_entry_names(const Entry& entry);

}  // namespace cubby
