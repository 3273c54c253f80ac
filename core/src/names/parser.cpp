// The parser of name expressions and demangled names into the template-name AST.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "names/name_parts.hpp"

namespace cubby::names {

namespace {

// The parse steps (names and types begun) one name may take: a few per token for any real name
// (its arguments parsed once, a value or an odd type tried twice); past it the parse stops, so a
// crafted name whose every level fails late cannot take exponential time (each level is tried as
// a type, then again within its bounds).
std::size_t step_budget(std::size_t tokens) { return 64 * tokens + 1024; }

constexpr std::string_view kNestsTooDeeply = "template arguments nest too deeply";
constexpr std::string_view kTooComplex = "the name is too complex to parse";

// Whether `error` ends the whole parse (a sub-parse's failure that another reading cannot mend).
bool fatal(const std::string& error) {
  return error.rfind(kNestsTooDeeply, 0) == 0 || error.rfind(kTooComplex, 0) == 0;
}

class Parser {
 public:
  // `steps`: what the parse may still spend, shared by its sub-parses (step_budget).
  Parser(const std::vector<Token>& tokens, std::size_t& steps)
      : t_(tokens), limit_(tokens.size() - 1), steps_(steps) {}

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

  // One step of the budget: false (with the error set) when it is spent.
  bool step() {
    if (steps_ == 0) return set_error(std::string(kTooComplex));
    --steps_;
    return true;
  }

  // qualified-name := ['::'] component ('::' component)*
  bool parse_qualified(QualifiedName& out, int depth) {
    if (depth > kMaxDepth) return set_error(std::string(kNestsTooDeeply));
    if (!step()) return false;
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
        if (fatal(direct.error)) return set_error(direct.error);
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
    if (depth > kMaxDepth) return set_error(std::string(kNestsTooDeeply));
    {
      Parser sub = sub_parser(start, stop);
      NameArg type;
      if (sub.parse_type(type, depth) && sub.pos == stop) {
        arg = std::move(type);
        return true;
      }
      if (fatal(sub.error)) return set_error(sub.error);
    }
    {
      Parser sub = sub_parser(start, stop);
      Value value;
      const bool parsed = sub.parse_expression(value, depth);
      if (fatal(sub.error)) return set_error(sub.error);
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
    if (!step()) return false;
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
    if (depth > kMaxDepth) return set_error(std::string(kNestsTooDeeply));
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
    if (depth > kMaxDepth) return set_error(std::string(kNestsTooDeeply));
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
    Parser sub(t_, steps_);
    sub.pos = start;
    sub.limit_ = stop;
    return sub;
  }

  const std::vector<Token>& t_;
  std::size_t limit_;
  std::size_t& steps_;
};

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
  std::size_t steps = step_budget(t.size());
  Parser parser(t, steps);
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

}  // namespace cubby::names

namespace cubby {

using namespace names;  // the folder's own internals

Result<ParsedName> parse_name_expression(std::string_view expression) {
  return parse_tokens(tokenize(expression), false, expression);
}

Result<ParsedName> parse_demangled_name(std::string_view demangled) {
  return parse_tokens(tokenize(demangled), true, demangled);
}

}  // namespace cubby
