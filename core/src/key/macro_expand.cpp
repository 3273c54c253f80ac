// The bounded expander of computed include operands; contract in macro_expand.hpp.
#include "key/macro_expand.hpp"

#include <algorithm>
#include <memory>
#include <set>
#include <utility>

namespace cubby {
namespace {

enum class Kind { identifier, number, literal, punctuator };

using HideSet = std::vector<std::string>;  // sorted

struct Token {
  std::string text;
  Kind kind = Kind::punctuator;
  bool space = false;  // preceded by a blank
  std::shared_ptr<const HideSet> hide;

  bool is(std::string_view spelling) const { return kind == Kind::punctuator && text == spelling; }
  bool hidden() const { return hide && std::binary_search(hide->begin(), hide->end(), text); }
};
using Tokens = std::vector<Token>;

bool ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }
bool digit(char c) { return c >= '0' && c <= '9'; }

// The preprocessing tokens of `text` (blanks set `space` on the next token).
Tokens tokenize(std::string_view text) {
  Tokens out;
  bool space = false;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      space = true;
      ++i;
      continue;
    }
    Token token;
    token.space = space;
    space = false;
    std::size_t end = i + 1;
    if (ident_start(c)) {
      while (end < text.size() && ident_char(text[end])) ++end;
      token.kind = Kind::identifier;
      if (end < text.size() && (text[end] == '"' || text[end] == '\'')) {
        const std::string_view prefix = text.substr(i, end - i);
        if (prefix == "L" || prefix == "u" || prefix == "U" || prefix == "u8") {
          token.kind = Kind::literal;
          const char quote = text[end++];
          while (end < text.size() && text[end] != quote) end += text[end] == '\\' ? 2 : 1;
          end = std::min(end + 1, text.size());
        }
      }
    } else if (digit(c) || (c == '.' && i + 1 < text.size() && digit(text[i + 1]))) {
      token.kind = Kind::number;
      while (end < text.size() && (ident_char(text[end]) || text[end] == '.' ||
                                   ((text[end] == '+' || text[end] == '-') &&
                                    (text[end - 1] == 'e' || text[end - 1] == 'E' ||
                                     text[end - 1] == 'p' || text[end - 1] == 'P')))) {
        ++end;
      }
    } else if (c == '"' || c == '\'') {
      token.kind = Kind::literal;
      while (end < text.size() && text[end] != c) end += text[end] == '\\' ? 2 : 1;
      end = std::min(end + 1, text.size());
    } else if (text.substr(i, 2) == "##") {
      end = i + 2;
    } else if (text.substr(i, 4) == "%:%:") {
      token.text = "##";
      end = i + 4;
    } else if (text.substr(i, 2) == "%:") {
      token.text = "#";
      end = i + 2;
    }
    if (token.text.empty()) token.text = std::string(text.substr(i, end - i));
    out.push_back(std::move(token));
    i = end;
  }
  return out;
}

// The spelling of `tokens` as `#` makes it: blanks between tokens as one space, `"` and `\` in
// literals escaped.
std::string stringize(const Tokens& tokens) {
  std::string out = "\"";
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0 && tokens[i].space) out += ' ';
    for (const char c : tokens[i].text) {
      if (tokens[i].kind == Kind::literal && (c == '"' || c == '\\')) out += '\\';
      out += c;
    }
  }
  return out + "\"";
}

std::shared_ptr<const HideSet> with(const std::shared_ptr<const HideSet>& hide,
                                    const std::string& name) {
  auto out = std::make_shared<HideSet>(hide ? *hide : HideSet{});
  out->insert(std::lower_bound(out->begin(), out->end(), name), name);
  return out;
}

class Expander {
 public:
  Expander(const MacroLookup& lookup, const ExpandLimits& limits)
      : lookup_(lookup), limits_(limits) {}

  // Every sequence `input` can expand to (empty with `why_` set when a limit was reached).
  std::vector<Tokens> expand(Tokens input) {
    struct State {
      Tokens out;
      Tokens rest;
      std::size_t at = 0;
    };
    std::vector<State> work;
    work.push_back({{}, std::move(input), 0});
    std::vector<Tokens> done;
    while (!work.empty()) {
      State state = std::move(work.back());
      work.pop_back();
      bool branched = false;
      while (state.at < state.rest.size()) {
        if (!spend(1)) return {};
        Token& token = state.rest[state.at];
        if (token.kind != Kind::identifier || token.hidden()) {
          state.out.push_back(std::move(token));
          ++state.at;
          continue;
        }
        consulted_.insert(token.text);
        const std::vector<MacroDefinition>& definitions = lookup_(token.text);
        if (definitions.empty()) {
          state.out.push_back(std::move(token));
          ++state.at;
          continue;
        }
        std::vector<State> next;
        for (const MacroDefinition& definition : definitions) {
          for (Tokens& replaced : replace(definition, state.rest, state.at)) {
            if (replaced.size() > limits_.max_tokens) return over("a token sequence");
            next.push_back({state.out, std::move(replaced), 0});
          }
          if (!why_.empty()) return {};
        }
        // The macro left as it is: it may be undefined where the include is read.
        State as_is{state.out, {}, 0};
        as_is.out.push_back(token);
        as_is.rest.assign(state.rest.begin() + static_cast<std::ptrdiff_t>(state.at) + 1,
                          state.rest.end());
        next.push_back(std::move(as_is));
        if (work.size() + next.size() > limits_.max_alternatives) return over("the alternatives");
        for (State& alternative : next) work.push_back(std::move(alternative));
        branched = true;
        break;
      }
      if (branched) continue;
      done.push_back(std::move(state.out));
      if (done.size() > limits_.max_alternatives) return over("the alternatives");
    }
    return done;
  }

  const std::string& why() const { return why_; }
  std::vector<std::string> consulted() const { return {consulted_.begin(), consulted_.end()}; }

 private:
  bool spend(std::size_t steps) {
    steps_ += steps;
    if (steps_ > limits_.max_steps && why_.empty()) over("the expansion steps");
    return why_.empty();
  }

  std::vector<Tokens> over(std::string_view what) {
    if (why_.empty()) {
      why_ = "its macro expansion exceeds the scan's bound on " + std::string(what);
    }
    return {};
  }

  // The sequences `rest` becomes when the macro at `at` is replaced by `definition` (and the rest
  // appended): none when a function-like macro is not called there or with the wrong count.
  std::vector<Tokens> replace(const MacroDefinition& definition, const Tokens& rest,
                              std::size_t at) {
    const Token& name = rest[at];
    if (definition.too_long)
      return over("a #define body too long to record"), std::vector<Tokens>{};
    std::size_t after = at + 1;
    std::vector<Tokens> bodies;
    if (!definition.function_like) {
      bodies = substitute(definition, name, {});
    } else {
      std::vector<Tokens> arguments;
      if (!read_arguments(rest, after, arguments)) return {};
      const std::size_t count = definition.parameters.size();
      if (arguments.size() == 1 && arguments[0].empty() && count == 0) arguments.clear();
      if (definition.variadic ? arguments.size() + 1 < count : arguments.size() != count) {
        return {};
      }
      if (definition.variadic && arguments.size() > count) {  // the rest go to the last one
        Tokens& last = arguments[count - 1];
        for (std::size_t i = count; i < arguments.size(); ++i) {
          last.push_back(Token{",", Kind::punctuator, false, nullptr});
          last.insert(last.end(), arguments[i].begin(), arguments[i].end());
        }
        arguments.resize(count);
      }
      if (definition.variadic && arguments.size() + 1 == count) arguments.emplace_back();
      bodies = substitute(definition, name, arguments);
    }
    for (Tokens& body : bodies) {
      if (!body.empty()) body.front().space = name.space;
      body.insert(body.end(), rest.begin() + static_cast<std::ptrdiff_t>(after), rest.end());
    }
    return bodies;
  }

  // The arguments of a call whose '(' is at `at` (moved past the ')'); false if there is none.
  static bool read_arguments(const Tokens& rest, std::size_t& at, std::vector<Tokens>& out) {
    if (at >= rest.size() || !rest[at].is("(")) return false;
    out.emplace_back();
    int depth = 0;
    for (std::size_t i = at + 1; i < rest.size(); ++i) {
      const Token& token = rest[i];
      if (token.is("(")) ++depth;
      if (token.is(")") && depth-- == 0) {
        at = i + 1;
        return true;
      }
      if (token.is(",") && depth == 0) {
        out.emplace_back();
      } else {
        out.back().push_back(token);
      }
    }
    return false;
  }

  // The replacement list of `definition` called by `name` with `arguments`: one sequence per
  // combination of the arguments' own expansions.
  std::vector<Tokens> substitute(const MacroDefinition& definition, const Token& name,
                                 const std::vector<Tokens>& arguments) {
    const Tokens body = tokenize(definition.body);
    const auto parameter = [&](const Token& token) -> int {
      if (token.kind != Kind::identifier) return -1;
      for (std::size_t p = 0; p < definition.parameters.size(); ++p) {
        if (definition.parameters[p] == token.text) return static_cast<int>(p);
      }
      return -1;
    };
    // Which parameters are used expanded (not next to ## nor after #).
    std::vector<std::vector<Tokens>> expanded(arguments.size());
    for (std::size_t i = 0; i < body.size(); ++i) {
      const int p = parameter(body[i]);
      if (p < 0 || !expanded[static_cast<std::size_t>(p)].empty()) continue;
      const bool raw =
          (i > 0 && (body[i - 1].is("##") || (definition.function_like && body[i - 1].is("#")))) ||
          (i + 1 < body.size() && body[i + 1].is("##"));
      if (raw) continue;
      expanded[static_cast<std::size_t>(p)] = expand(arguments[static_cast<std::size_t>(p)]);
      if (!why_.empty()) return {};
    }
    std::size_t combinations = 1;
    for (const auto& alternatives : expanded) {
      combinations *= std::max<std::size_t>(1, alternatives.size());
      if (combinations > limits_.max_alternatives) return over("the alternatives");
    }
    const auto hide = with(name.hide, definition.name);
    std::vector<Tokens> out;
    for (std::size_t combination = 0; combination < combinations; ++combination) {
      Tokens result;
      bool paste = false;
      std::size_t index = combination;
      std::vector<std::size_t> choice(expanded.size(), 0);
      for (std::size_t p = 0; p < expanded.size(); ++p) {
        const std::size_t n = std::max<std::size_t>(1, expanded[p].size());
        choice[p] = index % n;
        index /= n;
      }
      for (std::size_t i = 0; i < body.size(); ++i) {
        if (!spend(1)) return {};
        const Token& token = body[i];
        if (token.is("##")) {  // an empty left operand (a placemarker) pastes nothing
          paste = !result.empty();
          continue;
        }
        Tokens piece;
        const int p = parameter(token);
        if (definition.function_like && token.is("#") && i + 1 < body.size() &&
            parameter(body[i + 1]) >= 0) {
          Token text{stringize(arguments[static_cast<std::size_t>(parameter(body[i + 1]))]),
                     Kind::literal, token.space, nullptr};
          piece.push_back(std::move(text));
          ++i;
        } else if (p >= 0) {
          const auto& alternatives = expanded[static_cast<std::size_t>(p)];
          const bool raw = paste || (i + 1 < body.size() && body[i + 1].is("##"));
          piece = raw || alternatives.empty() ? arguments[static_cast<std::size_t>(p)]
                                              : alternatives[choice[static_cast<std::size_t>(p)]];
          if (!piece.empty()) piece.front().space = token.space;
        } else {
          piece.push_back(token);
        }
        if (paste && !piece.empty()) {
          Token& left = result.back();
          Tokens joined = tokenize(left.text + piece.front().text);
          const bool space = left.space;
          result.pop_back();
          for (Token& t : joined) result.push_back(std::move(t));
          if (!joined.empty()) result[result.size() - joined.size()].space = space;
          piece.erase(piece.begin());
        }
        paste = false;
        for (Token& t : piece) result.push_back(std::move(t));
      }
      for (Token& token : result) {
        token.hide = token.hide ? with(token.hide, definition.name) : hide;
      }
      out.push_back(std::move(result));
    }
    return out;
  }

  const MacroLookup& lookup_;
  const ExpandLimits& limits_;
  std::size_t steps_ = 0;
  std::string why_;
  std::set<std::string> consulted_;
};

// The header name `tokens` spell ("x" or <x>), or "" if they spell none.
std::string header_name(const Tokens& tokens) {
  if (tokens.empty()) return {};
  const Token& first = tokens.front();
  if (first.kind == Kind::literal && first.text.size() > 2 && first.text.front() == '"' &&
      first.text.back() == '"') {
    return first.text.substr(1, first.text.size() - 2);
  }
  if (!first.is("<")) return {};
  std::string name;
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    if (tokens[i].is(">")) return name;
    if (i > 1 && tokens[i].space) name += ' ';
    name += tokens[i].text;
  }
  return {};
}

}  // namespace

OperandNames expand_header_operand(std::string_view operand, const MacroLookup& lookup,
                                   const ExpandLimits& limits) {
  OperandNames out;
  Expander expander(lookup, limits);
  const std::vector<Tokens> sequences = expander.expand(tokenize(operand));
  out.consulted = expander.consulted();
  if (!expander.why().empty()) {
    out.unbounded = expander.why();
    return out;
  }
  std::set<std::string> names;
  for (const Tokens& sequence : sequences) {
    for (const Token& token : sequence) {
      if (token.kind == Kind::identifier && is_variable_predefined_macro(token.text)) {
        out.unbounded =
            "it names a header through " + token.text + ", whose value depends on the compile";
        return out;
      }
    }
    if (std::string name = header_name(sequence); !name.empty()) names.insert(std::move(name));
  }
  out.names.assign(names.begin(), names.end());
  return out;
}

}  // namespace cubby
