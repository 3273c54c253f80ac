// Direct parsing of Itanium-mangled symbol names into the template-name AST of name_match.hpp,
// without demangling to text first: the fast path of name recovery (recover.hpp).
//
// Covered: the subset NVRTC emits for kernels and variables of templated code: unscoped and
// nested names (`_Z1k...`, `_ZN2ns1kI...EE...`, `St`), template arguments (types, argument packs
// `J...E`, integral and enumeration literals `L<type><n>E`), builtin types, `K` (const), pointers
// and references, and substitutions `S_`/`S<seq>_` (with the Itanium substitution table). Only
// the name is parsed: the function's return and parameter types after it are not read (they do
// not take part in matching).
//
// Contract: when parse_mangled_name succeeds, its result equals what parse_demangled_name gives
// for the abi::__cxa_demangle text of the same symbol (tests/core/names/test_mangled_name.cpp
// checks this over the accuracy corpus). Anything outside the subset (operators, constructors,
// lambdas, local names, template parameters or expressions inside the name, volatile/restrict,
// arrays, function types, ABI tags, floating or out-of-range literals, ...) fails with
// Errc::invalid_argument saying what was met and where; callers then fall back to
// demangle + parse_demangled_name. Never throws; bounded work and depth on hostile input.
#pragma once

#include <string_view>

#include "cubby/error.hpp"
#include "names/name_match.hpp"

namespace cubby {

// Parses `mangled` ("_ZN2ns1kIfLi3EEEvPT_") into the name it denotes (ns::k<float, 3>);
// `function` is set when a function type follows the name.
Result<ParsedName> parse_mangled_name(std::string_view mangled);

}  // namespace cubby
