// The include lexer: which headers one text names in its include directives, without a
// preprocessor (the first step of the header scan, include_scan.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cubby {

// The include directives of one text, found after translation phases 1-3 as NVRTC 13 applies
// them: phase 1 (trigraphs: both readings are taken, as NVRTC replaces them in C++03/11/14 only),
// phase 2 (a backslash directly followed by LF or CR LF splices lines, inside directives and
// names too), phase 3 (comments are blanks, a block comment may span lines: `/**/#include`,
// `# /*x*/ include`, a multi-line comment ending on the directive's line; string, character and
// raw string literals are skipped so that "/*" inside them opens nothing). A directive starts
// with `#` or the digraph `%:` first on its line. `#include`, `#include_next` and
// `__has_include(...)` and a wrapper `NAME_HAS_INCLUDE(...)` (any case: CCCL's _CCCL_HAS_INCLUDE)
// (whose answer changes the program too) count, also inside `#if 0` blocks
// (a safe over-approximation).
struct IncludeList {
  std::vector<std::string> names;  // header names as spelled between the quotes or angles
  // Computed includes and include tests: `#include H`, `#include_next M(x)`, `__has_include(H)`,
  // `_CCCL_HAS_INCLUDE(H)` (an operand that is not a literal header name), each as
  // "LINE\tDIRECTIVE\tOPERAND": the original line number (splices counted), the directive as
  // read ("#include H", "__has_include(H)") and its operand (what follows `#include`, what the
  // parentheses hold), phase 3 applied (comments as blanks, blanks collapsed to one space). The
  // scan expands the operand over every definition it saw (macro_expand.hpp).
  std::vector<std::string> computed;
  // Every `#define` of the text (in every branch: `#if` is not evaluated, `#undef` ignored), as
  // "NAME BODY" or "NAME(P1,P2) BODY" (`...` spelled as written: "NAME(a,...)"), the body as
  // `computed`'s operands are; a body longer than kMaxDefinitionBody is kTooLongBody (a computed
  // include that reaches it is not bounded). Read by parse_macro_definition (macro_table.hpp).
  std::vector<std::string> defines;
  // What the scan cannot follow even with the definitions, each "LINE: DIRECTIVE: WHY":
  // `__has_include` named without a call (`#define HI __has_include`), or tested on one of several
  // parameters of a #define, or on a name built from a #define's parameters.
  std::vector<std::string> unresolvable;
  // Include-test macros: a function-like macro whose replacement tests its one parameter
  // (`#define HAS(X) __has_include(X)`, CCCL's _CCCL_HAS_INCLUDE) tests what its callers pass, so
  // that __has_include is not unresolvable; its calls are (the scan, include_scan.hpp, resolves
  // them across files). `test_macros`: such macros' names (a macro of more parameters that tests
  // one is unresolvable: its calls are not listed). `forwards`: "M W" for a
  // `#define M(X) ... W(X) ...` (M tests X if W does), "M W *" where M has more parameters,
  // "M W" for every name W in an object-like `#define M ...` (an alias: `#define M W`).
  // `calls`: every `W("x")` and `W(<x>)`, as `W "x"` / `W <x>`, and `W(NAME)` as `W NAME` (one
  // identifier, not a parameter of the #define around it) and `W ?` for any other argument list
  // (both unresolvable where W turns out to be an include-test macro). Known limit: a test
  // macro's name passed as an argument to another macro (`APPLY(HAS, <x>)`) is not followed.
  std::vector<std::string> test_macros;
  std::vector<std::string> forwards;
  std::vector<std::string> calls;
};
// Pure (no file access); every list sorted and de-duplicated.
IncludeList list_includes(std::string_view text);

// The version of what list_includes returns for a given text. The header scan keeps its results
// between processes (scan_record.hpp), so every change to what list_includes finds in some text
// must bump this: a record of another version is ignored.
inline constexpr std::uint32_t kIncludeLexerVersion = 2;

// A #define body longer than this is recorded as kTooLongBody (IncludeList::defines): CCCL's
// longest bodies are pasting tables nobody builds header names from, and the scan record holds
// every definition of every header.
inline constexpr std::size_t kMaxDefinitionBody = 1024;
inline constexpr std::string_view kTooLongBody = "\x01too long";

}  // namespace cubby
