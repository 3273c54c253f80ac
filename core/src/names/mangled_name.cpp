// Itanium-mangled names parsed straight into the template-name AST (see mangled_name.hpp).
#include "names/mangled_name.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "names/name_parts.hpp"

namespace cubby {
namespace {

using names::int_type;
using names::IntType;
using names::kMaxDepth;
using names::named;

// Bounds that keep hostile input cheap (kMaxDepth: name_parts.hpp, shared with the text parser).
constexpr std::size_t kMaxSubstitutions = 4096;

// The canonical spelling (as the text parser writes it) of a one-letter builtin type
// code, or empty.
std::string_view builtin_type(char code) {
  switch (code) {
    case 'v':
      return "void";
    case 'w':
      return "wchar_t";
    case 'b':
      return "bool";
    case 'c':
      return "char";
    case 'a':
      return "signed char";
    case 'h':
      return "unsigned char";
    case 's':
      return "short";
    case 't':
      return "unsigned short";
    case 'i':
      return "int";
    case 'j':
      return "unsigned int";
    case 'l':
      return "long";
    case 'm':
      return "unsigned long";
    case 'x':
      return "long long";
    case 'y':
      return "unsigned long long";
    case 'n':
      return "__int128";
    case 'o':
      return "unsigned __int128";
    case 'f':
      return "float";
    case 'd':
      return "double";
    case 'e':
      return "long double";
    default:
      return {};
  }
}

// The integral literal type of a one-letter builtin type code: its spelling and width (the
// integer table of name_parts.hpp); false for other codes.
struct LiteralType {
  std::string_view spelling;
  int width = 0;
  bool is_signed = true;
};

bool literal_type(char code, LiteralType& out) {
  const std::string_view spelling = builtin_type(code);
  const std::optional<IntType> type = int_type(spelling);
  if (!type) return false;
  out = {spelling, type->width, type->is_signed};
  return true;
}

class MangledParser {
 public:
  explicit MangledParser(std::string_view text) : s_(text), budget_(16 * text.size() + 1024) {}

  std::string error;

  bool parse(ParsedName& out) {
    if (s_.size() < 3 || s_[0] != '_' || s_[1] != 'Z') return unsupported("not an Itanium name");
    pos_ = 2;
    if (!parse_name(out.name, 0)) return false;
    if (out.name.parts.empty()) return unsupported("an empty name");
    // The function type is not parsed; a suffix the demangler prints apart (`.clone`, `$...`)
    // is left to it.
    for (std::size_t i = pos_; i < s_.size(); ++i) {
      const char c = s_[i];
      const bool ok =
          (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
      if (!ok) return unsupported("a suffix after the function type");
    }
    out.function = pos_ < s_.size();
    return true;
  }

 private:
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0';
  }

  bool unsupported(std::string_view what) {
    if (error.empty()) {
      error.append(what).append(" at offset ").append(std::to_string(pos_));
    }
    return false;
  }

  // Depth and total work (substitutions read back can expand exponentially) are bounded.
  bool too_deep(int depth) {
    if (depth > kMaxDepth) return !unsupported("nesting too deep");
    if (++steps_ > budget_) return !unsupported("a name that expands too much");
    return false;
  }

  // A substitution candidate is recorded as the text that spells it, and rebuilt (by parsing
  // that text again, adding nothing) only when a later `S..._` refers to it: most never are.
  enum class SubKind : std::uint8_t {
    type,     // [begin, end) is a <type>
    scope,    // [begin, end) are the leading components of a nested name (after the N)
    unscoped  // [begin, end) is an unscoped name (`St` and/or a source name)
  };
  struct Substitution {
    SubKind kind;
    std::size_t begin;
    std::size_t end;
  };

  bool add_substitution(SubKind kind, std::size_t begin) {
    if (replaying_ > 0) return true;
    if (subs_.size() >= kMaxSubstitutions) return unsupported("too many substitutions");
    subs_.push_back(Substitution{kind, begin, pos_});
    return true;
  }

  // Rebuilds substitution `index` as a type (a scope or unscoped name reads as a class name).
  bool expand_substitution(std::size_t index, NameArg& out, int depth) {
    if (too_deep(depth)) return false;
    const Substitution sub = subs_[index];
    const std::size_t resume = pos_;
    pos_ = sub.begin;
    ++replaying_;
    bool ok = false;
    out = NameArg{};
    switch (sub.kind) {
      case SubKind::type:
        ok = parse_type(out, depth + 1);
        break;
      case SubKind::scope:
        out.kind = NameArg::Kind::name;
        ok = parse_nested_components(out.name, sub.end, depth + 1);
        break;
      case SubKind::unscoped:
        out.kind = NameArg::Kind::name;
        ok = parse_unscoped(out.name);
        break;
    }
    --replaying_;
    if (ok && pos_ != sub.end) ok = unsupported("a substitution that does not read back");
    pos_ = resume;
    return ok;
  }

  // <source-name> ::= <positive length number> <identifier>
  bool parse_source_name(NameComponent& out) {
    std::size_t length = 0;
    std::size_t digits = 0;
    while (peek() >= '0' && peek() <= '9') {
      length = length * 10 + static_cast<std::size_t>(peek() - '0');
      ++pos_;
      if (++digits > 6) return unsupported("an identifier length that is too large");
    }
    if (length == 0 || length > s_.size() - pos_) return unsupported("a bad identifier length");
    const std::string_view id = s_.substr(pos_, length);
    pos_ += length;
    // The demangler prints `_GLOBAL__N...` (any of `._$` after `_GLOBAL_`) as the anonymous
    // namespace.
    if (id.size() >= 10 && id.substr(0, 8) == "_GLOBAL_" &&
        (id[8] == '.' || id[8] == '_' || id[8] == '$') && id[9] == 'N') {
      out = named("(anonymous namespace)");
      return true;
    }
    for (const char c : id) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '$';
      if (!ok) return unsupported("an identifier with an unusual character");
    }
    if (id[0] >= '0' && id[0] <= '9') return unsupported("an identifier that starts with a digit");
    out = named(id);
    return true;
  }

  // <substitution> ::= S_ | S <seq-id> _   (not the standard abbreviations Sa, Ss, ...)
  bool parse_substitution(NameArg& out, int depth) {
    ++pos_;  // 'S'
    std::size_t index = 0;
    if (peek() != '_') {
      std::size_t seq = 0;
      std::size_t digits = 0;
      while (peek() != '_') {
        const char c = peek();
        std::size_t d = 0;
        if (c >= '0' && c <= '9') {
          d = static_cast<std::size_t>(c - '0');
        } else if (c >= 'A' && c <= 'Z') {
          d = static_cast<std::size_t>(c - 'A') + 10;
        } else {
          return unsupported("a standard substitution or a bad substitution");
        }
        seq = seq * 36 + d;
        ++pos_;
        if (++digits > 4) return unsupported("a substitution index that is too large");
      }
      index = seq + 1;
    }
    ++pos_;  // '_'
    if (index >= subs_.size()) return unsupported("a substitution out of range");
    return expand_substitution(index, out, depth + 1);
  }

  // A substitution used as (part of) a scope or a template name: a plain class or namespace name.
  bool substitution_as_name(NameArg& sub, QualifiedName& out) {
    if (sub.kind != NameArg::Kind::name || sub.is_const || sub.is_volatile ||
        !sub.declarator.empty() || sub.name.parts.empty()) {
      return unsupported("a substitution of a type used as a name");
    }
    out = std::move(sub.name);
    return true;
  }

  // <unscoped-name> ::= [St] <source-name>
  bool parse_unscoped(QualifiedName& out) {
    if (peek() == 'S' && peek(1) == 't') {
      pos_ += 2;
      out.parts.push_back(named("std"));
      if (!(peek() >= '0' && peek() <= '9')) return unsupported("an unusual name after St");
    }
    NameComponent component;
    if (!parse_source_name(component)) return false;
    out.parts.push_back(std::move(component));
    return true;
  }

  // <name> (no local names): nested, `St` unscoped, unscoped, with optional template arguments.
  bool parse_name(QualifiedName& out, int depth) {
    if (too_deep(depth)) return false;
    const char c = peek();
    const std::size_t begin = pos_;
    if (c == 'N') return parse_nested(out, depth);
    if (c == 'S' && peek(1) != 't') {
      NameArg sub;
      if (!parse_substitution(sub, depth + 1)) return false;
      if (!substitution_as_name(sub, out)) return false;
      if (peek() != 'I') return unsupported("a substitution as a whole name");
      return parse_args(out.parts.back(), depth + 1);
    }
    if (c != 'S' && !(c >= '0' && c <= '9')) {
      return unsupported(std::string("a name starting with '") + c + "'");
    }
    if (!parse_unscoped(out)) return false;
    if (peek() != 'I') return true;
    // <unscoped-template-name> is a substitution candidate.
    if (!add_substitution(SubKind::unscoped, begin)) return false;
    return parse_args(out.parts.back(), depth + 1);
  }

  // <nested-name> ::= N <prefix>... E; every prefix not directly followed by E, and not itself a
  // substitution, becomes a substitution candidate.
  bool parse_nested(QualifiedName& out, int depth) {
    ++pos_;  // 'N'
    const char first = peek();
    if (first == 'K' || first == 'V' || first == 'r' || first == 'R' || first == 'O') {
      return unsupported("a cv- or ref-qualified member");
    }
    if (!parse_nested_components(out, std::string_view::npos, depth)) return false;
    if (out.parts.empty()) return unsupported("an empty nested name");
    ++pos_;  // 'E'
    return true;
  }

  // The components of a nested name, up to its `E` (left unread) or up to offset `stop` (when
  // a scope substitution is read back).
  bool parse_nested_components(QualifiedName& out, std::size_t stop, int depth) {
    const std::size_t begin = pos_;
    if (out.parts.empty()) out.parts.reserve(4);
    while (pos_ < stop) {
      if (too_deep(depth)) return false;
      const char c = peek();
      if (c == 'E') return true;
      if (c == 'S') {
        if (!out.parts.empty()) return unsupported("a substitution inside a nested name");
        if (peek(1) == 't') {
          pos_ += 2;
          out.parts.push_back(named("std"));
        } else {
          NameArg sub;
          if (!parse_substitution(sub, depth + 1)) return false;
          if (!substitution_as_name(sub, out)) return false;
        }
        continue;
      }
      if (c == 'I') {
        if (out.parts.empty() || out.parts.back().templated) {
          return unsupported("template arguments without a template name");
        }
        if (!parse_args(out.parts.back(), depth + 1)) return false;
      } else if (c >= '0' && c <= '9') {
        NameComponent component;
        if (!parse_source_name(component)) return false;
        out.parts.push_back(std::move(component));
      } else if (c == '\0') {
        return unsupported("a nested name that is not closed");
      } else {
        return unsupported(std::string("a name component starting with '") + c + "'");
      }
      if (peek() != 'E' && !add_substitution(SubKind::scope, begin)) return false;
    }
    return true;
  }

  // <template-args> ::= I <template-arg>+ E   (argument packs J...E are flattened)
  bool parse_args(NameComponent& component, int depth) {
    if (too_deep(depth)) return false;
    ++pos_;  // 'I'
    component.templated = true;
    component.args.reserve(4);
    while (peek() != 'E') {
      if (peek() == '\0') return unsupported("template arguments that are not closed");
      if (peek() == 'J') {
        ++pos_;
        while (peek() != 'E') {
          if (peek() == '\0') return unsupported("an argument pack that is not closed");
          if (peek() == 'J') return unsupported("a nested argument pack");
          if (!parse_arg(component.args, depth + 1)) return false;
        }
        ++pos_;
        continue;
      }
      if (!parse_arg(component.args, depth + 1)) return false;
    }
    ++pos_;
    return true;
  }

  bool parse_arg(std::vector<NameArg>& args, int depth) {
    if (too_deep(depth)) return false;
    NameArg arg;
    if (peek() == 'L') {
      if (!parse_literal(arg, depth)) return false;
    } else if (peek() == 'X') {
      return unsupported("an expression as a template argument");
    } else if (!parse_type(arg, depth)) {
      return false;
    }
    args.push_back(std::move(arg));
    return true;
  }

  // <expr-primary> ::= L <type> [n] <number> E, integral and enumeration types only.
  bool parse_literal(NameArg& out, int depth) {
    ++pos_;  // 'L'
    const char code = peek();
    if (code == '_') return unsupported("an external name as a template argument");
    LiteralType type;
    const bool builtin = literal_type(code, type);
    NameArg enumeration;
    if (builtin) {
      ++pos_;
    } else {
      if (!((code >= '0' && code <= '9') || code == 'N' || code == 'S')) {
        return unsupported("a literal of a type that is not integral");
      }
      if (!parse_type(enumeration, depth + 1)) return false;
      if (enumeration.kind != NameArg::Kind::name) {
        return unsupported("a literal of a type that is not an enumeration");
      }
    }
    const bool negative = peek() == 'n';
    if (negative) ++pos_;
    std::uint64_t magnitude = 0;
    std::size_t digits = 0;
    while (peek() >= '0' && peek() <= '9') {
      const auto d = static_cast<std::uint64_t>(peek() - '0');
      if (magnitude > (std::numeric_limits<std::uint64_t>::max() - d) / 10) {
        return unsupported("a literal that is too large");
      }
      magnitude = magnitude * 10 + d;
      ++pos_;
      ++digits;
    }
    if (digits == 0 || peek() != 'E') return unsupported("a literal that is not an integer");
    ++pos_;
    out.kind = NameArg::Kind::value;
    if (!builtin) {
      // As the demangler prints it, "(ns::Tag)1": a signed value of the enumeration.
      if (magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return unsupported("an enumeration literal that is too large");
      }
      out.negative = negative && magnitude != 0;
      out.magnitude = magnitude;
      out.name = std::move(enumeration.name);
      return true;
    }
    // Values inside the type's range only (the text parser reads others differently).
    if (type.width == 1) {
      if (negative || magnitude > 1) return unsupported("a bool literal other than 0 or 1");
    } else if (type.is_signed) {
      const std::uint64_t max = (std::uint64_t{1} << (type.width - 1)) - 1;
      if (magnitude > max) return unsupported("a literal outside its type");
    } else {
      const std::uint64_t max =
          type.width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << type.width) - 1;
      if (negative || magnitude > max) return unsupported("a literal outside its type");
    }
    out.negative = negative && magnitude != 0;
    out.magnitude = magnitude;
    out.value_type = std::string(type.spelling);
    return true;
  }

  // <type>: builtin, K (const), P, R, O, class/enumeration names (with template arguments) and
  // substitutions. Every type but a builtin or a bare substitution becomes a substitution
  // candidate (after the types inside it).
  bool parse_type(NameArg& out, int depth) {
    if (too_deep(depth)) return false;
    const char c = peek();
    const std::size_t begin = pos_;
    if (const std::string_view builtin = builtin_type(c); !builtin.empty()) {
      ++pos_;
      out.kind = NameArg::Kind::type;
      out.name.parts.push_back(named(builtin));
      return true;
    }
    switch (c) {
      case 'K': {
        ++pos_;
        if (peek() == 'K' || peek() == 'V' || peek() == 'r') return unsupported("stacked cv");
        if (!parse_type(out, depth + 1)) return false;
        if (out.kind == NameArg::Kind::value || out.kind == NameArg::Kind::raw) {
          return unsupported("const on a non-type");
        }
        if (out.declarator.empty()) {
          if (out.is_const) return unsupported("const twice");
          out.is_const = true;
        } else if (out.declarator.back() == '*') {
          out.declarator.append("const");
        } else {
          return unsupported("const on a reference or qualified pointer");
        }
        out.kind = NameArg::Kind::type;
        return add_substitution(SubKind::type, begin);
      }
      case 'P':
      case 'R':
      case 'O': {
        ++pos_;
        if (!parse_type(out, depth + 1)) return false;
        if (out.kind == NameArg::Kind::value || out.kind == NameArg::Kind::raw) {
          return unsupported("a pointer to a non-type");
        }
        if (!out.declarator.empty() && out.declarator.back() == '&') {
          return unsupported("a pointer or reference to a reference");
        }
        out.declarator.append(c == 'P' ? "*" : (c == 'R' ? "&" : "&&"));
        out.kind = NameArg::Kind::type;
        return add_substitution(SubKind::type, begin);
      }
      case 'S': {
        if (peek(1) == 't') break;  // `St` name: below
        NameArg sub;
        if (!parse_substitution(sub, depth + 1)) return false;
        if (peek() != 'I') {
          out = std::move(sub);
          return true;
        }
        out = NameArg{};
        if (!substitution_as_name(sub, out.name)) return false;
        if (out.name.parts.back().templated) return unsupported("template arguments twice");
        if (!parse_args(out.name.parts.back(), depth + 1)) return false;
        out.kind = NameArg::Kind::name;
        return add_substitution(SubKind::type, begin);
      }
      case 'N':
        break;
      default:
        if (c >= '0' && c <= '9') break;
        if (c == 'D') return unsupported("a D-type (decltype, char16_t, nullptr_t, ...)");
        if (c == 'T') return unsupported("a template parameter inside the name");
        return unsupported(std::string("a type starting with '") + c + "'");
    }
    out.kind = NameArg::Kind::name;
    if (!parse_name(out.name, depth + 1)) return false;
    return add_substitution(SubKind::type, begin);
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  std::vector<Substitution> subs_;
  int replaying_ = 0;  // > 0 while a substitution is read back: add nothing
  std::size_t steps_ = 0;
  std::size_t budget_;
};

}  // namespace

Result<ParsedName> parse_mangled_name(std::string_view mangled) {
  MangledParser parser(mangled);
  ParsedName out;
  if (!parser.parse(out)) {
    return fail(Errc::invalid_argument, "mangled name \"", std::string(mangled.substr(0, 200)),
                mangled.size() > 200 ? "...\"" : "\"", " is outside the directly parsed subset (",
                parser.error, "); demangle it and parse the text instead");
  }
  return out;
}

}  // namespace cubby
