// The macro definitions a header scan has seen (the source's, every scanned header's, `-D`
// options' and NVRTC's predefined ones), for expanding computed includes (macro_expand.hpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cubby {

// One `#define`, parsed from the text the include lexer records (IncludeList::defines):
// "NAME BODY" for an object-like macro, "NAME(P1,P2) BODY" for a function-like one (a `...`
// parameter is spelled "__VA_ARGS__"; a named variadic `args...` is spelled "args..."), BODY
// with comments removed and blanks collapsed to one space.
struct MacroDefinition {
  std::string name;
  bool function_like = false;
  std::vector<std::string> parameters;  // function-like only
  bool variadic = false;                // the last parameter takes the remaining arguments
  std::string body;
  bool too_long = false;  // the body was not recorded (include_lexer.hpp's kTooLongBody)
};

// Parses a recorded definition; nullopt if it names no macro.
std::optional<MacroDefinition> parse_macro_definition(std::string_view text);

// The recorded text of the definition a `-D` option's value makes ("X" -> "X 1", "X=Y" -> "X Y",
// "F(a)=a" -> "F(a) a"), as NVRTC reads it.
std::string definition_of_define_option(std::string_view value);

// NVRTC 13's predefined macros whose value is fixed for every program ("__CUDACC__ 1", ...), as
// recorded definitions.
const std::vector<std::string>& fixed_predefined_macros();

// Whether `name` is a macro NVRTC predefines with a value that depends on the compile (the
// architecture, the version, the line, the file: `__CUDA_ARCH__`, `__FILE__`, ...): a header name
// built from one cannot be bounded by the scan.
bool is_variable_predefined_macro(std::string_view name);

// Every definition of every name, as a union: a name defined in several `#if` branches or files,
// or redefined after an `#undef`, has several alternatives (a safe over-approximation: `#undef` is
// ignored). Definitions are parsed once, when first looked up. Not thread-safe (one per scan).
class MacroTable {
 public:
  // Adds one recorded definition text; the text must outlive the table (the scans own it).
  void add(std::string_view definition);
  // The distinct definitions of `name` (none: it is defined nowhere the scan looked).
  const std::vector<MacroDefinition>& find(std::string_view name);
  // How many definition texts were added (the fixpoint's progress measure).
  std::size_t size() const { return added_; }

 private:
  struct Entry {
    std::vector<std::string_view> texts;
    std::size_t parsed_count = 0;  // texts[0, parsed_count) are in `parsed`
    std::vector<MacroDefinition> parsed;
  };
  std::unordered_map<std::string_view, Entry> entries_;
  std::size_t added_ = 0;
};

}  // namespace cubby
