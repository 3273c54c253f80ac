// The bounded macro expander of computed includes: which header names an `#include MACRO` or
// `__has_include(MACRO)` operand can name, given every definition each macro may have.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "key/macro_table.hpp"

namespace cubby {

struct ExpandLimits {
  std::size_t max_steps = 20'000;      // tokens looked at, over every alternative
  std::size_t max_alternatives = 256;  // token sequences alive at once, and results
  std::size_t max_tokens = 1'024;      // one sequence's length
};

struct OperandNames {
  // Every header name the operand can expand to ("thrust/system/cuda/detail/x.h", "/abs/y.h"),
  // from `"..."` and `<...>` forms alike (the scan looks both up the same way); sorted, unique.
  std::vector<std::string> names;
  // Every identifier the expansion looked up, defined or not (sorted, unique): a definition of
  // any other name cannot change `names`.
  std::vector<std::string> consulted;
  // Empty when `names` is complete. Otherwise why no bound was found (a limit of ExpandLimits
  // reached, or a header name built from a predefined macro whose value depends on the compile,
  // is_variable_predefined_macro): the caller must cover the include another way.
  std::string unbounded;
};

// `lookup(name)`: every definition `name` may have where the operand is read (empty: none).
using MacroLookup = std::function<const std::vector<MacroDefinition>&(std::string_view)>;

// Expands `operand` (an include's operand after the directive, or what `__has_include( )` holds)
// as the C preprocessor does (object-like and function-like macros, arguments expanded before
// substitution, `#` stringizing, `##` pasting, a macro not expanded again inside its own
// expansion), taking every alternative: each definition of a macro, and the macro left as it is
// (it may be undefined where the include is read). An identifier with no definition stays as it
// is. Pure: no file access; the same answer for the same operand and lookup.
OperandNames expand_header_operand(std::string_view operand, const MacroLookup& lookup,
                                   const ExpandLimits& limits = {});

}  // namespace cubby
