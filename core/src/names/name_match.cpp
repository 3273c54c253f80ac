// Template-name AST, parsers for name expressions and demangled names, canonicalisation and the
// structural matcher (see name_match.hpp for the contract).
#include "names/name_match.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cubby {
namespace {

// Bounds that keep hostile input cheap: nesting depth and token count.
constexpr int kMaxDepth = 48;
constexpr std::size_t kMaxTokens = 20000;
constexpr std::string_view kAnonymous = "(anonymous namespace)";

// A component without template arguments, its hash set.
NameComponent named(std::string name) {
  NameComponent component;
  component.name_hash = name_hash(name);
  component.name = std::move(name);
  return component;
}

// ------------------------------------------------------------------------------------------
// Tokens

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

// Character classes, one table lookup per character.
constexpr std::uint8_t kIdentStart = 1;
constexpr std::uint8_t kDigit = 2;
constexpr std::uint8_t kSpace = 4;
constexpr std::uint8_t kPunct = 8;  // a one-character punctuator

struct CharClasses {
  std::uint8_t of[256] = {};
  constexpr CharClasses() {
    for (int c = 'a'; c <= 'z'; ++c) of[c] = kIdentStart;
    for (int c = 'A'; c <= 'Z'; ++c) of[c] = kIdentStart;
    of[static_cast<unsigned char>('_')] = kIdentStart;
    of[static_cast<unsigned char>('$')] = kIdentStart;
    for (int c = '0'; c <= '9'; ++c) of[c] = kDigit;
    for (const char c : {' ', '\t', '\n', '\r'}) of[static_cast<unsigned char>(c)] = kSpace;
    for (const char c : std::string_view("<>,()[]*&+-/%~!^|")) {
      of[static_cast<unsigned char>(c)] = kPunct;
    }
  }
};
constexpr CharClasses kChars;

std::uint8_t char_class(char c) { return kChars.of[static_cast<unsigned char>(c)]; }
bool is_ident_char(char c) { return (char_class(c) & (kIdentStart | kDigit)) != 0; }

struct Tokens {
  std::vector<Token> items;
  std::string error;  // empty when tokenising succeeded
};

bool is_builtin_word(std::string_view w);
bool is_cv(std::string_view w);

// kBuiltin, kCv or kPlain; most identifiers are told apart by their length and first letter.
std::uint8_t word_kind(std::string_view w) {
  if (w.size() < 3 || w.size() > 8) return kPlain;
  const char c = w[0];
  if (c == 'c' || c == 'v') {
    if (is_cv(w)) return kCv;
  } else if (c != 'u' && c != 's' && c != 'l' && c != 'i' && c != 'f' && c != 'd' && c != 'b' &&
             c != 'w' && c != '_') {
    return kPlain;
  }
  return is_builtin_word(w) ? kBuiltin : kPlain;
}

Tokens tokenize(std::string_view text) {
  Tokens out;
  out.items.reserve(text.size() / 3 + 2);
  std::size_t i = 0;
  bool spaced = false;
  while (i < text.size()) {
    if (out.items.size() >= kMaxTokens) {
      out.error = "the name is too long (more than " + std::to_string(kMaxTokens) + " tokens)";
      return out;
    }
    const char c = text[i];
    const std::uint8_t cls = char_class(c);
    if (cls == kSpace) {
      spaced = true;
      ++i;
      continue;
    }
    Token token;
    token.spaced = spaced;
    spaced = false;
    const std::size_t start = i;
    if (c == '(' && text.substr(i, kAnonymous.size()) == kAnonymous) {
      token.kind = Tok::ident;
      i += kAnonymous.size();
    } else if (cls == kIdentStart) {
      token.kind = Tok::ident;
      while (i < text.size() && is_ident_char(text[i])) ++i;
    } else if (cls == kDigit) {
      token.kind = Tok::number;
      while (i < text.size() && (is_ident_char(text[i]) || text[i] == '.')) ++i;
    } else if (c == '\'') {
      token.kind = Tok::character;
      ++i;
      while (i < text.size() && text[i] != '\'') i += (text[i] == '\\') ? 2 : 1;
      if (i >= text.size()) {
        out.error = "unterminated character literal at offset " + std::to_string(start);
        return out;
      }
      ++i;
    } else if (c == ':' && i + 1 < text.size() && text[i + 1] == ':') {
      token.kind = Tok::punct;
      i += 2;
    } else if ((c == '&' && i + 1 < text.size() && text[i + 1] == '&') ||
               ((c == '=' || c == '!') && i + 1 < text.size() && text[i + 1] == '=')) {
      token.kind = Tok::punct;
      i += 2;
    } else if (cls == kPunct) {
      token.kind = Tok::punct;
      ++i;
    } else {
      out.error =
          std::string("unexpected character '") + c + "' at offset " + std::to_string(start);
      return out;
    }
    token.text = std::string_view(text.data() + start, i - start);
    if (token.kind == Tok::punct) token.op = op_code(token.text);
    if (token.kind == Tok::ident) token.word = word_kind(token.text);
    out.items.push_back(token);
  }
  out.items.push_back(Token{Tok::end, {}, spaced});
  return out;
}

// ------------------------------------------------------------------------------------------
// Builtin types and integral values

bool is_builtin_word(std::string_view w) {
  if (w.size() < 3 || w.size() > 8) return false;
  switch (w[0]) {
    case 'u':
    case 's':
    case 'l':
    case 'i':
    case 'c':
    case 'f':
    case 'd':
    case 'b':
    case 'v':
    case 'w':
    case '_':
      break;
    default:
      return false;
  }
  return w == "unsigned" || w == "signed" || w == "short" || w == "long" || w == "int" ||
         w == "char" || w == "float" || w == "double" || w == "bool" || w == "void" ||
         w == "wchar_t" || w == "char8_t" || w == "char16_t" || w == "char32_t" || w == "__int128";
}

bool is_cv(std::string_view w) { return w == "const" || w == "volatile"; }

// The canonical spelling of a run of builtin type words, or empty if it is not one.
std::string canonical_builtin(const std::vector<std::string_view>& words) {
  int longs = 0;
  bool is_unsigned = false;
  bool is_signed = false;
  bool is_short = false;
  std::string_view base;
  for (std::string_view w : words) {
    if (w == "long") {
      ++longs;
    } else if (w == "unsigned") {
      is_unsigned = true;
    } else if (w == "signed") {
      is_signed = true;
    } else if (w == "short") {
      is_short = true;
    } else if (w == "int") {
      if (!base.empty() && base != "int") return {};
      base = "int";
    } else {
      if (!base.empty()) return {};
      base = w;
    }
  }
  if (is_unsigned && is_signed) return {};
  const std::string sign = is_unsigned ? "unsigned " : "";
  if (base == "char") {
    if (longs != 0 || is_short) return {};
    return is_unsigned ? "unsigned char" : (is_signed ? "signed char" : "char");
  }
  if (base == "double") {
    if (is_unsigned || is_signed || is_short || longs > 1) return {};
    return longs == 1 ? "long double" : "double";
  }
  if (base == "__int128") {
    if (longs != 0 || is_short) return {};
    return sign + "__int128";
  }
  if (!base.empty() && base != "int") {
    if (longs != 0 || is_short || is_unsigned || is_signed) return {};
    return std::string(base);
  }
  if (is_short) return longs == 0 ? sign + "short" : std::string();
  if (longs == 1) return sign + "long";
  if (longs == 2) return sign + "long long";
  if (longs > 2) return {};
  return sign + "int";
}

struct IntType {
  int width = 32;
  bool is_signed = true;
  int rank = 1;
};

std::optional<IntType> int_type(std::string_view t) {
  if (t == "bool") return IntType{1, false, 0};
  if (t == "char" || t == "signed char") return IntType{8, true, 0};
  if (t == "unsigned char") return IntType{8, false, 0};
  if (t == "short") return IntType{16, true, 0};
  if (t == "unsigned short") return IntType{16, false, 0};
  if (t == "wchar_t" || t == "char32_t") return IntType{32, t == "wchar_t", 0};
  if (t == "char16_t") return IntType{16, false, 0};
  if (t == "char8_t") return IntType{8, false, 0};
  if (t == "int") return IntType{32, true, 1};
  if (t == "unsigned int") return IntType{32, false, 1};
  if (t == "long") return IntType{64, true, 2};
  if (t == "unsigned long") return IntType{64, false, 2};
  if (t == "long long") return IntType{64, true, 3};
  if (t == "unsigned long long") return IntType{64, false, 3};
  return std::nullopt;
}

// Reduces `bits` to the width of `type`, sign-extending signed types.
std::uint64_t truncate_to(std::uint64_t bits, const IntType& type) {
  if (type.width == 1) return bits != 0 ? 1 : 0;
  if (type.width >= 64) return bits;
  const std::uint64_t mask = (std::uint64_t{1} << type.width) - 1;
  bits &= mask;
  if (type.is_signed && (bits >> (type.width - 1)) != 0) bits |= ~mask;
  return bits;
}

// An integral constant during evaluation.
struct Value {
  std::uint64_t bits = 0;
  std::string type = "int";  // builtin spelling; empty for an enumeration
  QualifiedName enumeration;
};

bool value_negative(const Value& v) {
  const auto type = int_type(v.type);
  const bool is_signed = v.type.empty() || (type && type->is_signed);
  return is_signed && static_cast<std::int64_t>(v.bits) < 0;
}

// The integral promotions and usual arithmetic conversions of LP64.
std::string common_type(const std::string& a, const std::string& b) {
  auto promote = [](const std::string& t) -> std::string {
    const auto type = int_type(t);
    if (!type || type->rank == 0) return "int";
    return t;
  };
  const std::string pa = promote(a);
  const std::string pb = promote(b);
  if (pa == pb) return pa;
  const IntType ta = *int_type(pa);
  const IntType tb = *int_type(pb);
  if (ta.is_signed == tb.is_signed) return ta.rank >= tb.rank ? pa : pb;
  const std::string& u = ta.is_signed ? pb : pa;
  const std::string& s = ta.is_signed ? pa : pb;
  const IntType tu = *int_type(u);
  const IntType ts = *int_type(s);
  if (tu.rank >= ts.rank) return u;
  if (ts.width > tu.width) return s;
  return "unsigned " + s;
}

// Parses an integer literal ("5", "0x1F", "5ul", "07"); false if it is not one.
bool parse_integer(std::string_view text, Value& out) {
  std::size_t i = 0;
  int base = 10;
  if (text.size() > 1 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    i = 2;
  } else if (text.size() > 1 && text[0] == '0' && (text[1] == 'b' || text[1] == 'B')) {
    base = 2;
    i = 2;
  } else if (text.size() > 1 && text[0] == '0') {
    base = 8;
    i = 1;
  }
  std::uint64_t value = 0;
  std::size_t digits = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\'') continue;
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (base == 16 && c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0 || d >= base) break;
    const auto limit = std::numeric_limits<std::uint64_t>::max();
    if (value > (limit - static_cast<std::uint64_t>(d)) / static_cast<std::uint64_t>(base)) {
      return false;
    }
    value = value * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
    ++digits;
  }
  if (digits == 0 && base != 8) return false;
  int longs = 0;
  bool is_unsigned = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == 'u' || c == 'U') && !is_unsigned) {
      is_unsigned = true;
    } else if (c == 'l' || c == 'L') {
      ++longs;
    } else {
      return false;
    }
  }
  if (longs > 2) return false;
  const std::uint64_t int_max = 0x7fffffff;
  const std::uint64_t uint_max = 0xffffffff;
  const std::uint64_t long_max = 0x7fffffffffffffff;
  std::string type;
  if (longs == 2) {
    type = is_unsigned || value > long_max ? "unsigned long long" : "long long";
  } else if (longs == 1) {
    type = is_unsigned || value > long_max ? "unsigned long" : "long";
  } else if (is_unsigned) {
    type = value > uint_max ? "unsigned long" : "unsigned int";
  } else if (value <= int_max) {
    type = "int";
  } else if (base != 10 && value <= uint_max) {
    type = "unsigned int";
  } else {
    type = value <= long_max ? "long" : "unsigned long";
  }
  out.bits = value;
  out.type = std::move(type);
  out.enumeration = {};
  return true;
}

bool parse_character(std::string_view text, Value& out) {
  if (text.size() < 3) return false;
  const std::string_view body = text.substr(1, text.size() - 2);
  std::uint64_t value = 0;
  if (body.size() == 1 && body[0] != '\\') {
    value = static_cast<unsigned char>(body[0]);
  } else if (body.size() == 2 && body[0] == '\\') {
    switch (body[1]) {
      case 'n':
        value = '\n';
        break;
      case 't':
        value = '\t';
        break;
      case 'r':
        value = '\r';
        break;
      case '0':
        value = 0;
        break;
      case '\\':
        value = '\\';
        break;
      case '\'':
        value = '\'';
        break;
      case '"':
        value = '"';
        break;
      default:
        return false;
    }
  } else if (body.size() >= 3 && body[0] == '\\' && body[1] == 'x' && body.size() <= 4) {
    Value hex;
    if (!parse_integer("0x" + std::string(body.substr(2)), hex)) return false;
    value = hex.bits;
  } else {
    return false;
  }
  out.bits = truncate_to(value, IntType{8, true, 0});
  out.type = "char";
  out.enumeration = {};
  return true;
}

// ------------------------------------------------------------------------------------------
// Parser

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens), limit_(tokens.size() - 1) {}

  std::string error;
  std::size_t pos = 0;

  // Tokens at or past `limit_` read as the end token.
  const Token& peek(std::size_t ahead = 0) const {
    const std::size_t at = pos + ahead;
    return at < limit_ ? t_[at] : t_.back();
  }
  bool at_punct(std::string_view p, std::size_t ahead = 0) const {
    const Token& token = peek(ahead);
    return token.kind == Tok::punct && token.op == op_code(p);
  }
  bool at_end() const { return peek().kind == Tok::end; }

  bool set_error(std::string message) {
    if (error.empty()) error = std::move(message);
    return false;
  }

  // qualified-name := ['::'] component ('::' component)*
  bool parse_qualified(QualifiedName& out, int depth) {
    if (depth > kMaxDepth) return set_error("template arguments nest too deeply");
    if (at_punct("::")) ++pos;
    if (out.parts.empty()) out.parts.reserve(4);
    while (true) {
      const Token& name = peek();
      if (name.kind != Tok::ident || name.word != kPlain || name.text == "operator") {
        return set_error("expected a name at \"" + std::string(name.text) + "\"");
      }
      NameComponent component;
      component.name = std::string(name.text);
      component.name_hash = name_hash(component.name);
      ++pos;
      if (at_punct("<")) {
        ++pos;
        component.templated = true;
        if (!parse_args(component.args, depth + 1)) return false;
      }
      out.parts.push_back(std::move(component));
      if (!at_punct("::")) return true;
      ++pos;
    }
  }

  // After '<': arguments up to the matching '>'.
  bool parse_args(std::vector<NameArg>& args, int depth) {
    if (at_punct(">")) {
      ++pos;
      return true;
    }
    args.reserve(4);
    while (true) {
      const std::size_t start = pos;
      {
        // Most arguments are types: parse one in place, without scanning for its end first.
        Parser direct = sub_parser(start, limit_);
        NameArg type;
        if (direct.parse_type(type, depth) && (direct.at_punct(",") || direct.at_punct(">"))) {
          args.push_back(std::move(type));
          pos = direct.pos + 1;
          if (direct.at_punct(">")) return true;
          continue;
        }
        if (!direct.error.empty() && direct.error.rfind("template arguments nest", 0) == 0) {
          return set_error(direct.error);
        }
      }
      int nesting = 0;
      while (true) {
        const Token& token = peek();
        if (token.kind == Tok::end) return set_error("a template argument list is not closed");
        if (token.kind == Tok::punct) {
          const char op = token.op;
          if (nesting == 0 && (op == ',' || op == '>')) break;
          if (op == '(' || op == '[') ++nesting;
          if (op == ')' || op == ']') {
            if (--nesting < 0) return set_error("unbalanced parentheses");
          }
          if (op == '<' && pos > 0 && t_[pos - 1].kind == Tok::ident) ++nesting;
          if (op == '>' && nesting > 0) --nesting;
        }
        ++pos;
      }
      const std::size_t stop = pos;
      if (stop == start) return set_error("an empty template argument");
      NameArg arg;
      if (!parse_arg(start, stop, arg, depth)) return false;
      args.push_back(std::move(arg));
      if (at_punct(">")) {
        ++pos;
        return true;
      }
      ++pos;  // ','
    }
  }

  bool parse_arg(std::size_t start, std::size_t stop, NameArg& arg, int depth) {
    if (depth > kMaxDepth) return set_error("template arguments nest too deeply");
    {
      Parser sub = sub_parser(start, stop);
      NameArg type;
      if (sub.parse_type(type, depth) && sub.pos == stop) {
        arg = std::move(type);
        return true;
      }
      if (!sub.error.empty() && sub.error.rfind("template arguments nest", 0) == 0) {
        return set_error(sub.error);
      }
    }
    {
      Parser sub = sub_parser(start, stop);
      Value value;
      const bool parsed = sub.parse_expression(value, depth);
      if (!sub.error.empty() && sub.error.rfind("template arguments nest", 0) == 0) {
        return set_error(sub.error);
      }
      if (parsed && sub.pos == stop) {
        arg.kind = NameArg::Kind::value;
        arg.negative = value_negative(value);
        arg.magnitude = arg.negative ? ~value.bits + 1 : value.bits;  // two's complement magnitude
        arg.value_type = value.type;
        arg.name = std::move(value.enumeration);
        return true;
      }
    }
    arg.kind = NameArg::Kind::raw;
    for (std::size_t i = start; i < stop; ++i) {
      const Token& token = t_[i];
      if (i > start && token.spaced && token.kind != Tok::punct && t_[i - 1].kind != Tok::punct) {
        arg.raw.push_back(' ');
      }
      arg.raw.append(token.text);
    }
    return true;
  }

  // type := cv* (builtin-words | ['typename'|'class'|'struct'|'enum'] qualified) cv* declarator*
  bool parse_type(NameArg& out, int depth) {
    out = NameArg{};
    auto take_cv = [&] {
      while (peek().word == kCv) {
        if (peek().text == "const") out.is_const = true;
        if (peek().text == "volatile") out.is_volatile = true;
        ++pos;
      }
    };
    take_cv();
    const bool global = at_punct("::");
    if (peek(global ? 1 : 0).kind != Tok::ident) return false;
    if (!global && peek().word == kBuiltin) {
      std::vector<std::string_view> words;
      while (peek().word != kPlain) {
        if (peek().word == kCv) {
          take_cv();
          continue;
        }
        words.push_back(peek().text);
        ++pos;
      }
      std::string builtin = canonical_builtin(words);
      if (builtin.empty()) return set_error("not a valid builtin type");
      out.name.parts.push_back(named(std::move(builtin)));
      out.kind = NameArg::Kind::type;
    } else {
      const std::string_view word = peek().text;
      if (word == "true" || word == "false" || word == "nullptr" || word == "sizeof") {
        return false;
      }
      if (word == "typename" || word == "class" || word == "struct" || word == "enum") ++pos;
      if (!parse_qualified(out.name, depth + 1)) return false;
      out.kind = NameArg::Kind::name;
    }
    take_cv();
    while (true) {
      if (at_punct("*")) {
        ++pos;
        out.declarator.push_back('*');
        while (peek().word == kCv) {
          out.declarator.append(peek().text);
          ++pos;
        }
      } else if (at_punct("&") || at_punct("&&")) {
        out.declarator.append(peek().text);
        ++pos;
      } else if (at_punct("[") && peek(1).kind == Tok::number && at_punct("]", 2)) {
        out.declarator.append("[").append(peek(1).text).append("]");
        pos += 3;
      } else {
        break;
      }
    }
    if (out.is_const || out.is_volatile || !out.declarator.empty()) out.kind = NameArg::Kind::type;
    return true;
  }

  // Constant expressions over integral literals (see name_match.hpp).
  bool parse_expression(Value& out, int depth) { return parse_binary(out, 0, depth); }

  static int precedence(std::string_view op) {
    if (op == "|") return 1;
    if (op == "^") return 2;
    if (op == "&") return 3;
    if (op == "==" || op == "!=") return 4;
    if (op == "<<" || op == ">>") return 5;
    if (op == "+" || op == "-") return 6;
    if (op == "*" || op == "/" || op == "%") return 7;
    return -1;
  }

  // The binary operator at the current position ("<<" is two adjacent '<'), or empty.
  std::string_view binary_operator(std::size_t& length) const {
    const Token& token = peek();
    length = 1;
    if (token.kind != Tok::punct) return {};
    if ((token.text == "<" || token.text == ">") && at_punct(token.text, 1) && !peek(1).spaced) {
      length = 2;
      return token.text == "<" ? "<<" : ">>";
    }
    if (token.text == "<" || token.text == ">") return {};
    return precedence(token.text) > 0 ? token.text : std::string_view{};
  }

  bool parse_binary(Value& out, int min_precedence, int depth) {
    if (depth > kMaxDepth) return set_error("template arguments nest too deeply");
    if (!parse_unary(out, depth + 1)) return false;
    while (true) {
      std::size_t length = 1;
      const std::string_view op = binary_operator(length);
      const int prec = op.empty() ? -1 : precedence(op);
      if (prec < 0 || prec <= min_precedence) return true;
      pos += length;
      Value rhs;
      if (!parse_binary(rhs, prec, depth + 1)) return false;
      if (!apply(op, out, rhs)) return false;
    }
  }

  bool apply(std::string_view op, Value& lhs, const Value& rhs) {
    if (lhs.type.empty() || rhs.type.empty()) return false;  // enumerations: not modelled
    if (op == "==" || op == "!=") {
      const std::string type = common_type(lhs.type, rhs.type);
      const IntType t = *int_type(type);
      const bool equal = truncate_to(lhs.bits, t) == truncate_to(rhs.bits, t);
      lhs.bits = (equal == (op == "==")) ? 1 : 0;
      lhs.type = "bool";
      return true;
    }
    const bool shift = op == "<<" || op == ">>";
    const std::string type =
        shift ? common_type(lhs.type, lhs.type) : common_type(lhs.type, rhs.type);
    const IntType t = *int_type(type);
    const std::uint64_t a = lhs.bits;
    const std::uint64_t b = rhs.bits;
    const auto sa = static_cast<std::int64_t>(a);
    const auto sb = static_cast<std::int64_t>(b);
    std::uint64_t r = 0;
    if (op == "+") {
      r = a + b;
    } else if (op == "-") {
      r = a - b;
    } else if (op == "*") {
      r = a * b;
    } else if (op == "/" || op == "%") {
      if (b == 0) return set_error("division by zero");
      if (t.is_signed) {
        if (sa == std::numeric_limits<std::int64_t>::min() && sb == -1) return false;
        r = static_cast<std::uint64_t>(op == "/" ? sa / sb : sa % sb);
      } else {
        r = op == "/" ? a / b : a % b;
      }
    } else if (shift) {
      if (b >= static_cast<std::uint64_t>(t.width)) return false;
      r = op == "<<" ? a << b : (t.is_signed ? static_cast<std::uint64_t>(sa >> b) : a >> b);
    } else if (op == "&") {
      r = a & b;
    } else if (op == "|") {
      r = a | b;
    } else if (op == "^") {
      r = a ^ b;
    } else {
      return false;
    }
    lhs.bits = truncate_to(r, t);
    lhs.type = type;
    return true;
  }

  bool parse_unary(Value& out, int depth) {
    if (depth > kMaxDepth) return set_error("template arguments nest too deeply");
    const Token& token = peek();
    if (token.kind == Tok::punct &&
        (token.text == "-" || token.text == "+" || token.text == "~" || token.text == "!")) {
      const std::string_view op = token.text;
      ++pos;
      if (!parse_unary(out, depth + 1)) return false;
      if (out.type.empty()) return false;
      if (op == "!") {
        out.bits = out.bits == 0 ? 1 : 0;
        out.type = "bool";
        return true;
      }
      out.type = common_type(out.type, out.type);
      const IntType t = *int_type(out.type);
      if (op == "-") out.bits = truncate_to(~out.bits + 1, t);
      if (op == "~") out.bits = truncate_to(~out.bits, t);
      return true;
    }
    if (at_punct("(")) {
      // A cast `(type)operand`, else a parenthesised expression.
      const std::size_t save = pos;
      ++pos;
      NameArg type;
      Parser probe = *this;
      if (probe.parse_type(type, depth + 1) && probe.at_punct(")")) {
        const Token& after = probe.peek(1);
        const bool operand =
            after.kind == Tok::number || after.kind == Tok::character ||
            (after.kind == Tok::ident && (after.text == "true" || after.text == "false")) ||
            (after.kind == Tok::punct &&
             (after.text == "(" || after.text == "-" || after.text == "+" || after.text == "~" ||
              after.text == "!"));
        if (operand && type.declarator.empty()) {
          pos = probe.pos + 1;
          if (!parse_unary(out, depth + 1)) return false;
          if (out.type.empty()) return false;
          if (type.kind == NameArg::Kind::type && type.name.parts.size() == 1) {
            const auto target = int_type(type.name.parts[0].name);
            if (!target) return false;
            out.bits = truncate_to(out.bits, *target);
            out.type = type.name.parts[0].name;
          } else {
            out.type.clear();  // an enumeration
            out.enumeration = std::move(type.name);
          }
          return true;
        }
      }
      pos = save + 1;
      if (!parse_binary(out, 0, depth + 1)) return false;
      if (!at_punct(")")) return set_error("expected ')'");
      ++pos;
      return true;
    }
    if (token.kind == Tok::number) {
      ++pos;
      return parse_integer(token.text, out);
    }
    if (token.kind == Tok::character) {
      ++pos;
      return parse_character(token.text, out);
    }
    if (token.kind == Tok::ident && (token.text == "true" || token.text == "false")) {
      ++pos;
      out.bits = token.text == "true" ? 1 : 0;
      out.type = "bool";
      out.enumeration = {};
      return true;
    }
    return false;
  }

 private:
  Parser sub_parser(std::size_t start, std::size_t stop) const {
    Parser sub(t_);
    sub.pos = start;
    sub.limit_ = stop;
    return sub;
  }

  const std::vector<Token>& t_;
  std::size_t limit_;
};

// ------------------------------------------------------------------------------------------
// Canonicalisation of expressions

// The standard typedefs as NVRTC 13's <cuda/std/cstdint> and <cuda/std/cstddef> define them
// (measured with nvrtcGetLoweredName on sm_90; note intptr_t is `long long`, unlike glibc),
// reachable unqualified, as std:: or as cuda::std::.
std::string_view standard_typedef(std::string_view name) {
  struct Alias {
    std::string_view name;
    std::string_view type;
  };
  static constexpr Alias kAliases[] = {
      {"size_t", "unsigned long"},
      {"ptrdiff_t", "long"},
      {"intptr_t", "long long"},
      {"uintptr_t", "unsigned long long"},
      {"int8_t", "signed char"},
      {"uint8_t", "unsigned char"},
      {"int16_t", "short"},
      {"uint16_t", "unsigned short"},
      {"int32_t", "int"},
      {"uint32_t", "unsigned int"},
      {"int64_t", "long long"},
      {"uint64_t", "unsigned long long"},
      {"intmax_t", "long long"},
      {"uintmax_t", "unsigned long long"},
      {"int_least8_t", "signed char"},
      {"uint_least8_t", "unsigned char"},
      {"int_least16_t", "short"},
      {"uint_least16_t", "unsigned short"},
      {"int_least32_t", "int"},
      {"uint_least32_t", "unsigned int"},
      {"int_least64_t", "long long"},
      {"uint_least64_t", "unsigned long long"},
      {"int_fast8_t", "signed char"},
      {"uint_fast8_t", "unsigned char"},
      {"int_fast16_t", "short"},
      {"uint_fast16_t", "unsigned short"},
      {"int_fast32_t", "int"},
      {"uint_fast32_t", "unsigned int"},
      {"int_fast64_t", "long long"},
      {"uint_fast64_t", "unsigned long long"},
      {"max_align_t", "long double"},
  };
  if (!name.ends_with("_t")) return {};  // every alias does
  for (const Alias& alias : kAliases) {
    if (alias.name == name) return alias.type;
  }
  return {};
}

// True when `parts[0..n-1]` (the qualification) is empty, `std`, or `cuda::std` (with an
// optional inline namespace such as `__4`).
bool std_qualified(const QualifiedName& name) {
  const auto& p = name.parts;
  const std::size_t n = p.size() - 1;
  auto plain = [&](std::size_t i) { return !p[i].templated; };
  for (std::size_t i = 0; i < n; ++i) {
    if (!plain(i)) return false;
  }
  if (n == 0) return true;
  std::size_t i = 0;
  if (p[0].name == "cuda") i = 1;
  if (i >= n || p[i].name != "std") return false;
  ++i;
  if (i < n && p[i].name.rfind("__", 0) == 0) ++i;
  return i == n;
}

NameArg dynamic_extent_value() {
  NameArg value;
  value.kind = NameArg::Kind::value;
  value.magnitude = std::numeric_limits<std::uint64_t>::max();
  value.value_type = "unsigned long";
  return value;
}

void canonicalize(QualifiedName& name, int depth);

void canonicalize(NameArg& arg, int depth) {
  if (depth > kMaxDepth) return;
  if (arg.kind != NameArg::Kind::type && arg.kind != NameArg::Kind::name) return;
  auto& parts = arg.name.parts;
  if (parts.empty()) return;
  canonicalize(arg.name, depth + 1);
  const NameComponent& last = parts.back();
  if (!std_qualified(arg.name)) return;
  if (!last.templated) {
    if (const std::string_view builtin = standard_typedef(last.name); !builtin.empty()) {
      parts.assign(1, named(std::string(builtin)));
      arg.kind = NameArg::Kind::type;
      return;
    }
    if (last.name == "dynamic_extent" && arg.kind == NameArg::Kind::name) {
      arg = dynamic_extent_value();
    }
    return;
  }
  // dextents<I, N> -> extents<I, dynamic_extent x N>; dims<N, I = size_t> likewise.
  const bool dextents = last.name == "dextents" && last.args.size() == 2;
  const bool dims = last.name == "dims" && (last.args.size() == 1 || last.args.size() == 2);
  if (!dextents && !dims) return;
  const NameArg& rank_arg = dextents ? last.args[1] : last.args[0];
  if (rank_arg.kind != NameArg::Kind::value || rank_arg.negative || rank_arg.magnitude > 64) {
    return;
  }
  NameComponent extents = named("extents");
  extents.templated = true;
  if (dextents) {
    extents.args.push_back(last.args[0]);
  } else if (last.args.size() == 2) {
    extents.args.push_back(last.args[1]);
  } else {
    NameArg index;
    index.kind = NameArg::Kind::type;
    index.name.parts.push_back(named("unsigned long"));
    extents.args.push_back(std::move(index));
  }
  for (std::uint64_t i = 0; i < rank_arg.magnitude; ++i) {
    extents.args.push_back(dynamic_extent_value());
  }
  parts.back() = std::move(extents);
}

void canonicalize(QualifiedName& name, int depth) {
  if (depth > kMaxDepth) return;
  for (NameComponent& component : name.parts) {
    for (NameArg& arg : component.args) canonicalize(arg, depth + 1);
  }
}

// ------------------------------------------------------------------------------------------
// Printing

void print(const QualifiedName& name, std::string& out, int depth);

void print(const NameArg& arg, std::string& out, int depth) {
  switch (arg.kind) {
    case NameArg::Kind::type:
    case NameArg::Kind::name:
      if (arg.is_const) out.append("const ");
      if (arg.is_volatile) out.append("volatile ");
      print(arg.name, out, depth + 1);
      out.append(arg.declarator);
      return;
    case NameArg::Kind::value: {
      const bool builtin = !arg.value_type.empty();
      const std::string digits = std::to_string(arg.magnitude);
      std::string suffix;
      if (arg.value_type == "unsigned int") suffix = "u";
      if (arg.value_type == "long") suffix = "l";
      if (arg.value_type == "unsigned long") suffix = "ul";
      if (arg.value_type == "long long") suffix = "ll";
      if (arg.value_type == "unsigned long long") suffix = "ull";
      if (arg.value_type == "bool") {
        out.append(arg.magnitude != 0 ? "true" : "false");
        return;
      }
      const bool cast = !builtin || (suffix.empty() && arg.value_type != "int");
      if (cast) {
        out.push_back('(');
        if (builtin) {
          out.append(arg.value_type);
        } else {
          print(arg.name, out, depth + 1);
        }
        out.push_back(')');
      }
      if (arg.negative) out.push_back('-');
      out.append(digits).append(suffix);
      return;
    }
    case NameArg::Kind::raw:
      out.append(arg.raw);
      return;
  }
}

void print(const QualifiedName& name, std::string& out, int depth) {
  if (depth > kMaxDepth * 4) {
    out.append("...");
    return;
  }
  for (std::size_t i = 0; i < name.parts.size(); ++i) {
    if (i > 0) out.append("::");
    const NameComponent& component = name.parts[i];
    out.append(component.name);
    if (!component.templated) continue;
    out.push_back('<');
    for (std::size_t a = 0; a < component.args.size(); ++a) {
      if (a > 0) out.append(", ");
      print(component.args[a], out, depth + 1);
    }
    out.push_back('>');
  }
}

// ------------------------------------------------------------------------------------------
// Matching

// Costs of the canonicalisations, so the most literal match wins (see match_name).
constexpr int kElideCost = 1;       // a namespace of the symbol absent from the expression
constexpr int kDefaultCost = 1;     // template arguments filled from the symbol
constexpr int kLiteralCost = 1;     // a value of another integral type (`4` for `4ul`)
constexpr int kEnumeratorCost = 2;  // an enumerator by name for a value of its enumeration

int qualified_score(const QualifiedName& e, const QualifiedName& c, int depth);

int arg_score(const NameArg& e, const NameArg& c, int depth) {
  if (depth > kMaxDepth) return -1;
  using Kind = NameArg::Kind;
  if (e.kind == Kind::raw || c.kind == Kind::raw) {
    return e.kind == c.kind && e.raw == c.raw ? 0 : -1;
  }
  if (c.kind == Kind::value) {
    if (e.kind == Kind::value) {
      if (e.negative != c.negative || e.magnitude != c.magnitude) return -1;
      if (e.value_type.empty() != c.value_type.empty()) return -1;
      if (c.value_type.empty()) return qualified_score(e.name, c.name, depth + 1);
      return e.value_type == c.value_type ? 0 : kLiteralCost;
    }
    if (e.kind != Kind::name || !c.value_type.empty() || e.name.parts.size() < 2) return -1;
    // An enumerator `scope::X` for a value of enumeration `enum`: scoped (scope is the
    // enumeration) or unscoped (scope is the enumeration's scope).
    QualifiedName scope = e.name;
    scope.parts.pop_back();
    if (scope.parts.back().templated) return -1;
    const int scoped = qualified_score(scope, c.name, depth + 1);
    if (scoped >= 0) return kEnumeratorCost + scoped;
    if (c.name.parts.size() >= 2) {
      QualifiedName enum_scope = c.name;
      enum_scope.parts.pop_back();
      const int unscoped = qualified_score(scope, enum_scope, depth + 1);
      if (unscoped >= 0) return kEnumeratorCost + unscoped;
    }
    return -1;
  }
  // c is a type (the demangler never prints a bare name).
  if (e.kind == Kind::value) return -1;
  if (e.is_const != c.is_const || e.is_volatile != c.is_volatile) return -1;
  if (e.declarator != c.declarator) return -1;
  return qualified_score(e.name, c.name, depth + 1);
}

int component_score(const NameComponent& e, const NameComponent& c, int depth) {
  if (e.name_hash != 0 && c.name_hash != 0 && e.name_hash != c.name_hash) return -1;
  if (e.templated != c.templated || e.name != c.name) return -1;
  if (e.args.size() > c.args.size()) return -1;
  int total = e.args.size() < c.args.size() ? kDefaultCost : 0;
  for (std::size_t i = 0; i < e.args.size(); ++i) {
    const int s = arg_score(e.args[i], c.args[i], depth + 1);
    if (s < 0) return -1;
    total += s;
  }
  return total;
}

// Aligns the expression's components with the symbol's: in order, the last with the last, each
// symbol component the expression lacks elided (namespaces only). Dynamic programming over
// (expression index, symbol index); -1 when no alignment exists.
int qualified_score(const QualifiedName& e, const QualifiedName& c, int depth) {
  if (depth > kMaxDepth) return -1;
  const std::size_t n = e.parts.size();
  const std::size_t m = c.parts.size();
  if (n == 0 || m == 0 || n > m) return -1;
  // The last components always align (only namespaces before them are elided): most
  // mismatches end here, before any table is built.
  const int last = component_score(e.parts[n - 1], c.parts[m - 1], depth + 1);
  if (last < 0) return -1;
  if (n == 1 && m == 1) return last;
  if (n == m) {
    int total = last;
    for (std::size_t i = 0; i + 1 < n; ++i) {
      const int s = component_score(e.parts[i], c.parts[i], depth + 1);
      if (s < 0) return -1;
      total += s;
    }
    return total;
  }
  // When every component before the last is a plain name on both sides (namespaces), each
  // aligned pair scores 0 and each elided one kElideCost: an alignment exists exactly when the
  // expression's prefix is a subsequence of the symbol's (found greedily), at the same cost the
  // table below would give.
  {
    bool plain = true;
    for (std::size_t i = 0; i + 1 < n && plain; ++i) plain = !e.parts[i].templated;
    for (std::size_t j = 0; j + 1 < m && plain; ++j) plain = !c.parts[j].templated;
    if (plain) {
      std::size_t i = 0;
      for (std::size_t j = 0; j + 1 < m && i + 1 < n; ++j) {
        if (component_score(e.parts[i], c.parts[j], depth + 1) == 0) ++i;
      }
      if (i + 1 < n) return -1;
      return last + static_cast<int>(m - n) * kElideCost;
    }
  }
  // best[i][j]: cost of aligning e[i..] with c[j..]; on the stack for the usual sizes.
  constexpr int kNone = std::numeric_limits<int>::max();
  constexpr std::size_t kSmall = 64;
  const std::size_t cells = (n + 1) * (m + 1);
  int small[kSmall];
  std::vector<int> large;
  int* best = small;
  if (cells > kSmall) {
    large.resize(cells);
    best = large.data();
  }
  std::fill(best, best + cells, kNone);
  auto at = [&](std::size_t i, std::size_t j) -> int& { return best[i * (m + 1) + j]; };
  at(n, m) = 0;
  for (std::size_t j = m; j-- > 0;) {
    for (std::size_t i = n; i-- > 0;) {
      if (n - i > m - j) continue;
      int result = kNone;
      if (at(i + 1, j + 1) != kNone) {
        const int s =
            (i + 1 == n && j + 1 == m) ? last : component_score(e.parts[i], c.parts[j], depth + 1);
        if (s >= 0) result = s + at(i + 1, j + 1);
      }
      if (j + 1 < m && !c.parts[j].templated && at(i, j + 1) != kNone) {
        result = std::min(result, kElideCost + at(i, j + 1));
      }
      at(i, j) = result;
    }
  }
  return at(0, 0) == kNone ? -1 : at(0, 0);
}

// Names of the expression (classes, enumerators, typedefs) no candidate mentions: the likely
// reason nothing matched.
void unknown_names(const QualifiedName& name, const std::vector<NameCandidate>& candidates,
                   std::vector<std::string>& out, int depth) {
  if (depth > kMaxDepth) return;
  for (const NameComponent& component : name.parts) {
    for (const NameArg& arg : component.args) {
      if (arg.kind != NameArg::Kind::name && arg.kind != NameArg::Kind::type) continue;
      const std::string& last = arg.name.parts.back().name;
      if (arg.name.parts.size() == 1 && last.find(' ') != std::string::npos) continue;
      const bool mentioned =
          std::any_of(candidates.begin(), candidates.end(), [&](const NameCandidate& candidate) {
            std::size_t at = 0;
            while ((at = candidate.demangled.find(last, at)) != std::string::npos) {
              const std::size_t end = at + last.size();
              const bool starts = at == 0 || !is_ident_char(candidate.demangled[at - 1]);
              const bool ends =
                  end == candidate.demangled.size() || !is_ident_char(candidate.demangled[end]);
              if (starts && ends) return true;
              at = end;
            }
            return false;
          });
      if (!mentioned) {
        std::string text;
        print(arg.name, text, 0);
        if (std::find(out.begin(), out.end(), text) == out.end()) out.push_back(text);
      }
      unknown_names(arg.name, candidates, out, depth + 1);
    }
  }
}

Result<ParsedName> parse_tokens(const Tokens& tokens, bool demangled, std::string_view text) {
  auto invalid = [&](const std::string& why) -> Failure {
    return fail(Errc::invalid_argument, demangled ? "demangled name \"" : "name expression \"",
                std::string(text.substr(0, 300)), text.size() > 300 ? "...\"" : "\"",
                " cannot be parsed: ", why,
                demangled ? "; cubby does not model this kind of symbol"
                          : "; write it as a template name such as ns::k<float, 3>");
  };
  if (!tokens.error.empty()) return invalid(tokens.error);
  const std::vector<Token>& t = tokens.items;
  Parser parser(t);
  ParsedName out;
  std::size_t stop = t.size() - 1;  // the end token
  if (demangled) {
    // Drop a trailing parameter list, then start at the last depth-0 name.
    if (stop > 0 && t[stop - 1].kind == Tok::punct && t[stop - 1].text == ")") {
      int nesting = 0;
      std::size_t i = stop;
      while (i-- > 0) {
        if (t[i].kind != Tok::punct) continue;
        if (t[i].op == ')') ++nesting;
        if (t[i].op == '(' && --nesting == 0) break;
      }
      if (nesting != 0) return invalid("unbalanced parentheses");
      stop = i;
      out.function = true;
    }
    std::size_t start = 0;
    int nesting = 0;
    for (std::size_t i = 0; i < stop; ++i) {
      const Token& token = t[i];
      if (token.kind == Tok::punct) {
        if (token.op == '<' || token.op == '(' || token.op == '[') ++nesting;
        if (token.op == '>' || token.op == ')' || token.op == ']') --nesting;
        continue;
      }
      if (nesting == 0 && token.kind == Tok::ident &&
          (i == 0 || !(t[i - 1].kind == Tok::punct && t[i - 1].op == ':'))) {
        start = i;
      }
    }
    if (nesting != 0) return invalid("unbalanced brackets");
    parser.pos = start;
  } else {
    if (parser.at_punct("&")) ++parser.pos;
  }
  if (!parser.parse_qualified(out.name, 0)) {
    return invalid(parser.error.empty() ? "not a qualified name" : parser.error);
  }
  if (parser.pos != stop) {
    return invalid("unexpected \"" + std::string(t[parser.pos].text) + "\" after the name");
  }
  if (!demangled) canonicalize(out.name, 0);
  return out;
}

}  // namespace

Result<ParsedName> parse_name_expression(std::string_view expression) {
  return parse_tokens(tokenize(expression), false, expression);
}

Result<ParsedName> parse_demangled_name(std::string_view demangled) {
  return parse_tokens(tokenize(demangled), true, demangled);
}

std::uint64_t name_hash(std::string_view name) noexcept {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash == 0 ? 1 : hash;
}

std::string to_string(const QualifiedName& name) {
  std::string out;
  print(name, out, 0);
  return out;
}

int match_score(const QualifiedName& expression, const QualifiedName& symbol) {
  return qualified_score(expression, symbol, 0);
}

NameMatch match_name(const ParsedName& expression, const std::vector<NameCandidate>& candidates) {
  NameMatch result;
  int best = std::numeric_limits<int>::max();
  std::vector<std::size_t> winners;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const int score = qualified_score(expression.name, candidates[i].parsed.name, 0);
    if (score < 0 || score > best) continue;
    if (score < best) {
      best = score;
      winners.clear();
    }
    winners.push_back(i);
  }
  if (winners.size() == 1) {
    result.resolved = true;
    result.candidate = winners[0];
    result.inexactness = best;
    return result;
  }
  const std::string text = to_string(expression.name);
  if (winners.size() > 1) {
    result.reason = "ambiguous: " + std::to_string(winners.size()) + " symbols match `" + text +
                    "` equally well (";
    for (std::size_t k = 0; k < winners.size() && k < 3; ++k) {
      result.reason.append(k == 0 ? "`" : ", `")
          .append(candidates[winners[k]].demangled)
          .append("`");
    }
    result.reason.append(winners.size() > 3 ? ", ...)" : ")");
    result.reason.append(
        "; spell out every template argument (defaults included) with builtin types");
    return result;
  }
  const std::string& base = expression.name.parts.back().name;
  std::size_t same_name = 0;
  const NameCandidate* example = nullptr;
  for (const NameCandidate& candidate : candidates) {
    if (!candidate.parsed.name.parts.empty() && candidate.parsed.name.parts.back().name == base) {
      ++same_name;
      if (example == nullptr) example = &candidate;
    }
  }
  std::vector<std::string> unknown;
  unknown_names(expression.name, candidates, unknown, 0);
  result.reason = "no symbol matches `" + text + "`";
  if (same_name == 0) {
    result.reason.append(": the module has no kernel or variable named `" + base + "`");
  } else {
    result.reason.append(
        ": " + std::to_string(same_name) + " symbol" + (same_name == 1 ? "" : "s") + " named `" +
        base + "` exist, none with these template arguments (e.g. `" + example->demangled + "`)");
  }
  if (!unknown.empty()) {
    result.reason.append("; `" + unknown.front() +
                         "` appears in no symbol: a typedef, alias or enumerator of the program "
                         "that mangling erased cannot be seen through; spell it as its "
                         "underlying type or value");
  }
  return result;
}

}  // namespace cubby
