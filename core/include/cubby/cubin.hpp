// CUBIN reader: the kernels and variables of a CUBIN (an ELF file), no driver needed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/error.hpp"
#include "cubby/export.h"

namespace cubby {

struct CubinVariable {
  std::string name;  // mangled name
  std::uint64_t size = 0;
};

struct CUBBY_API CubinSymbols {
  std::vector<std::string> kernels;      // STT_FUNC symbols that are entry points (global), sorted
  std::vector<CubinVariable> variables;  // STT_OBJECT symbols with a name, sorted by name

  bool has_kernel(std::string_view name) const;    // binary search
  bool has_variable(std::string_view name) const;  // binary search
};

// Reads the ELF symbol table of a CUBIN (ELF64, little-endian). Errc::corrupt, naming the
// defect, for anything that is not a well-formed ELF64 or whose tables point outside the bytes.
// Never reads out of bounds, whatever the input.
CUBBY_API Result<CubinSymbols> read_cubin_symbols(std::string_view elf);

// A kernel or variable as a view into the CUBIN bytes it was read from.
struct CubinSymbolRef {
  std::string_view name;   // mangled name, never empty
  bool variable = false;   // else a kernel
  std::uint64_t size = 0;  // variables: bytes
};

// The same symbols as read_cubin_symbols, without copying: views into `elf` (valid while its
// bytes are), in symbol-table order, unsorted, duplicates kept. Same checks and errors.
CUBBY_API Result<std::vector<CubinSymbolRef>> read_cubin_symbol_refs(std::string_view elf);

// True when `name` is a symbol (kernel or variable) of the payload. For PTX, looks for the name
// as an `.entry`/`.global`/`.const` declaration. LTO-IR is opaque: always true.
CUBBY_API bool payload_has_symbol(std::string_view payload, std::string_view kind_name,
                                  std::string_view name);

}  // namespace cubby
