// Internals of name recovery shared by its files (namespace cubby::names): the bounds, the
// tokens, builtin types and integral values, canonicalisation and printing of the AST of
// names/name_match.hpp. Not installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "names/name_match.hpp"

namespace cubby::names {

// Bounds that keep hostile input cheap: nesting depth (text and mangled parsers alike) and token
// count.
constexpr int kMaxDepth = 48;
constexpr std::size_t kMaxTokens = 20000;
constexpr std::string_view kAnonymous = "(anonymous namespace)";

// A component without template arguments, its hash set.
NameComponent named(std::string_view name);

// ---- tokens (tokens.cpp)

enum class Tok : std::uint8_t { ident, number, character, punct, end };

struct Token {
  Tok kind = Tok::end;
  std::string_view text;
  bool spaced = false;    // whitespace before it
  char op = 0;            // punctuators: op_code(text)
  std::uint8_t word = 0;  // identifiers: kPlain, kBuiltin or kCv
};

constexpr std::uint8_t kPlain = 0;
constexpr std::uint8_t kBuiltin = 1;
constexpr std::uint8_t kCv = 2;

// One character per punctuator, so comparisons are integer compares.
constexpr char op_code(std::string_view p) {
  if (p.size() == 1) return p[0];
  if (p == "::") return ':';
  if (p == "&&") return 'A';
  if (p == "==") return 'E';
  if (p == "!=") return 'N';
  return '?';
}

struct Tokens {
  std::vector<Token> items;
  std::string error;  // empty when tokenising succeeded
};

bool is_ident_char(char c);
Tokens tokenize(std::string_view text);

// ---- builtin types and integral values (integers.cpp)

bool is_builtin_word(std::string_view w);
bool is_cv(std::string_view w);
// The canonical spelling of a run of builtin type words, or empty if it is not one.
std::string canonical_builtin(const std::vector<std::string_view>& words);

// Width, signedness and conversion rank of an integral type (LP64, as NVRTC's target).
struct IntType {
  int width = 32;
  bool is_signed = true;
  int rank = 1;
};
// The integral type spelled `t` (canonical builtin spelling), or nullopt.
std::optional<IntType> int_type(std::string_view t);
// Reduces `bits` to the width of `type`, sign-extending signed types.
std::uint64_t truncate_to(std::uint64_t bits, const IntType& type);

// An integral constant during evaluation.
struct Value {
  std::uint64_t bits = 0;
  std::string type = "int";  // builtin spelling; empty for an enumeration
  QualifiedName enumeration;
};
bool value_negative(const Value& v);
// The integral promotions and usual arithmetic conversions of LP64.
std::string common_type(const std::string& a, const std::string& b);
// Parses an integer literal ("5", "0x1F", "5ul", "07"); false if it is not one.
bool parse_integer(std::string_view text, Value& out);
// Parses a character literal ('a', '\n', '\x41'); false if it is not one.
bool parse_character(std::string_view text, Value& out);

// ---- canonicalisation (canonical.cpp) and printing (print.cpp)

void canonicalize(NameArg& arg, int depth);
void canonicalize(QualifiedName& name, int depth);
void print(const NameArg& arg, std::string& out, int depth);
void print(const QualifiedName& name, std::string& out, int depth);

}  // namespace cubby::names
