// Template names as a small AST, parsed from name expressions ("ns::k<float, 2 + 1>") and from
// demangled symbols ("void ns::v2::k<float, 3>(float*)"), and the structural matcher that finds
// which symbol of a module a name expression denotes.
//
// Canonicalisation (applied before comparing): whitespace and commas are tokens, not text; the
// return type and parameter list of a demangled function are stripped; namespaces present in the
// symbol but absent from the expression (inline namespaces such as `cuda::std::__4`,
// `(anonymous namespace)`) are elided; integer literals are values with a type (`5u`, `(char)97`,
// `'a'`, `-3`, `1 + 1`); the standard fixed-width and size typedefs of NVRTC's LP64 target
// (`size_t` -> `unsigned long`, `cuda::std::uint64_t` -> `unsigned long long`, ...);
// `cuda::std::dextents<I, N>` as `extents<I, dynamic_extent x N>` (and `dims<N, I>`), with
// `dynamic_extent` the maximum of `size_t`; a scoped or unscoped enumerator (`ns::Tag::B`) is any
// value of its enumeration (`(ns::Tag)1`); template arguments an expression omits are filled
// from the symbol (default arguments).
//
// Matching contract: every canonicalisation keeps the kernel the expression denotes among the
// matches, and counts how far from literal it had to go. The best-scoring match is taken only
// when it is the single one; two equally good matches, or none, leave the expression
// unresolved with the reason. A name cubby cannot see through (a user typedef such as
// `ns::real_t`) never matches something else: the expression stays unresolved. The contract
// assumes the expression was instantiated in the module (as NVRTC guarantees for the compile
// that produced it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/error.hpp"

namespace cubby {

struct NameArg;

// One component of a qualified name: `k<float, 3>` or `ns`. `name` is the identifier,
// "(anonymous namespace)", or for a builtin type its canonical spelling ("unsigned long").
struct NameComponent {
  std::string name;
  bool templated = false;       // has a template argument list (possibly empty: `k<>`)
  std::vector<NameArg> args;    // template arguments
  std::uint64_t name_hash = 0;  // name_hash(name) as the parsers set it (0: not set); speeds up
                                // comparisons, never decides them alone
};

// The hash the parsers store in NameComponent::name_hash (FNV-1a; never 0).
std::uint64_t name_hash(std::string_view name) noexcept;

// `a::b<...>::c`.
struct QualifiedName {
  std::vector<NameComponent> parts;
};

// A template argument.
struct NameArg {
  enum class Kind : std::uint8_t {
    type,   // a type: `name` (builtin or class), cv-qualifiers and declarator
    name,   // a bare qualified name that may be a type or a value (`ns::Tag::B`, `ns::idx_t`)
    value,  // an integral constant: `negative`/`magnitude`, typed by `value_type`
    raw,    // anything else (function types, member pointers): compared as canonical text
  };
  Kind kind = Kind::raw;
  QualifiedName name;     // type / name; for a value of enumeration type, the enumeration
  bool is_const = false;  // type: top-level const
  bool is_volatile = false;
  std::string declarator;  // type: "*", "*const*", "&", "&&", "[4]", ... (canonical)
  bool negative = false;   // value
  std::uint64_t magnitude = 0;
  std::string value_type;  // value: builtin spelling ("int", "unsigned long", "char", "bool"),
                           // empty for an enumeration (then `name` is the enumeration)
  std::string raw;         // raw: canonical text
};

// What was parsed: the name, and whether a demangled symbol was a function.
struct ParsedName {
  QualifiedName name;
  bool function = false;  // demangled text had a parameter list
};

// Parses a name expression as given to nvrtcAddNameExpression (leading `&` and `::` allowed).
// Errc::invalid_argument saying where and why for text that is not a template name.
Result<ParsedName> parse_name_expression(std::string_view expression);

// Parses demangled text, dropping the return type and the parameter list of a function.
// Errc::invalid_argument for names the matcher does not model (lambdas, operators, ...).
Result<ParsedName> parse_demangled_name(std::string_view demangled);

// Canonical text of a parsed name ("ns::k<float, 3>", values as "5u", "(char)97", "-3").
std::string to_string(const QualifiedName& name);

// A symbol the expression may denote.
struct NameCandidate {
  std::string symbol;     // mangled name
  std::string demangled;  // its demangled text
  ParsedName parsed;      // parse_demangled_name(demangled)
  bool variable = false;  // a __device__ variable (else a kernel)
};

// The answer for one expression: `symbol` (index into the candidates) or the reason there is none.
struct NameMatch {
  bool resolved = false;
  std::size_t candidate = 0;  // when resolved
  int inexactness = 0;        // canonicalisation steps the match needed (0: literal)
  std::string reason;         // when unresolved: "no symbol ...", "ambiguous: ...", ...
};

// Matches a parsed expression against candidates (see the contract at the top).
NameMatch match_name(const ParsedName& expression, const std::vector<NameCandidate>& candidates);

// The structural comparison: -1 when `expression` cannot denote `symbol`, else the inexactness.
int match_score(const QualifiedName& expression, const QualifiedName& symbol);

}  // namespace cubby
