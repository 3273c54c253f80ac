// Translation phases 1-3 and the include directives they leave (list_includes).
#include "key/include_lexer.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cubby {
namespace {

// Phase 1 (trigraphs, only when `trigraphs`) and phase 2 (line splicing) over `text`. NVRTC 13
// splices a backslash followed directly by LF or CR LF (not by blanks), and replaces trigraphs
// in C++03/11/14 modes only; a lone CR is a blank, not a line end.
// `splices`: the offsets in the result where a line end was removed (for original line numbers).
std::string splice_lines(std::string_view text, bool trigraphs, std::vector<std::size_t>& splices) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    std::size_t width = 1;
    if (trigraphs && c == '?' && i + 2 < text.size() && text[i + 1] == '?') {
      static constexpr std::string_view kFrom = "=/'()!<>-";
      static constexpr std::string_view kTo = "#\\^[]|{}~";
      const std::size_t at = kFrom.find(text[i + 2]);
      if (at != std::string_view::npos) {
        c = kTo[at];
        width = 3;
      }
    }
    if (c == '\\') {
      const std::size_t next = i + width;
      if (next < text.size() && text[next] == '\n') {
        i = next;
        splices.push_back(out.size());
        continue;
      }
      if (next + 1 < text.size() && text[next] == '\r' && text[next + 1] == '\n') {
        i = next + 1;
        splices.push_back(out.size());
        continue;
      }
    }
    out += c;
    i += width - 1;
  }
  return out;
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r'; }

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}

bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

// Phase 3 and directive recognition over spliced text (see `list_includes`).
class IncludeLexer {
 public:
  IncludeLexer(std::string_view text, const std::vector<std::size_t>& splices, IncludeList& out)
      : t_(text), splices_(splices), out_(out) {}

  void run() {
    bool line_start = true;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '\n') {
        line_start = true;
        in_define_ = false;
        ++i_;
      } else if (is_blank(c)) {
        ++i_;
      } else if (skip_comment()) {
        // a comment is one blank: a directive may follow it on its last line
      } else if (line_start && (c == '#' || (c == '%' && at(i_ + 1) == ':'))) {
        directive_at_ = i_;
        i_ += c == '#' ? 1 : 2;
        line_start = false;
        directive();
      } else {
        line_start = false;
        token();
      }
    }
  }

 private:
  char at(std::size_t i) const { return i < t_.size() ? t_[i] : '\0'; }

  // Skips a comment at i_ (a block comment may span lines: it is one blank); false if none.
  bool skip_comment() {
    if (at(i_) != '/') return false;
    if (at(i_ + 1) == '/') {
      const std::size_t end = t_.find('\n', i_);
      i_ = end == std::string_view::npos ? t_.size() : end;
      return true;
    }
    if (at(i_ + 1) == '*') {
      const std::size_t end = t_.find("*/", i_ + 2);
      i_ = end == std::string_view::npos ? t_.size() : end + 2;
      return true;
    }
    return false;
  }

  // Skips blanks and comments without leaving the line (comments may span lines).
  void skip_blanks() {
    while (i_ < t_.size()) {
      if (is_blank(t_[i_])) {
        ++i_;
      } else if (!skip_comment()) {
        return;
      }
    }
  }

  // The original (unspliced) line number of offset `at`: lines ended before it, splices included.
  std::size_t line_at(std::size_t at) const {
    const std::size_t ends = static_cast<std::size_t>(std::count(
        t_.begin(), t_.begin() + static_cast<std::ptrdiff_t>(std::min(at, t_.size())), '\n'));
    const auto splices = std::upper_bound(splices_.begin(), splices_.end(), at) - splices_.begin();
    return 1 + ends + static_cast<std::size_t>(splices);
  }
  std::string line_prefix(std::size_t at) const { return std::to_string(line_at(at)) + ": "; }

  // The text from `from` to the end of its logical line, as phase 3 leaves it: comments (which may
  // span lines) as blanks, every run of blanks as one space, trimmed; literals verbatim.
  std::string capture(std::size_t from) const {
    std::string out;
    bool blank = false;
    for (std::size_t i = from; i < t_.size() && t_[i] != '\n';) {
      const char c = t_[i];
      if (c == '/' && at(i + 1) == '/') break;
      if (c == '/' && at(i + 1) == '*') {
        const std::size_t end = t_.find("*/", i + 2);
        i = end == std::string_view::npos ? t_.size() : end + 2;
        blank = true;
        continue;
      }
      if (is_blank(c)) {
        blank = true;
        ++i;
        continue;
      }
      if (blank && !out.empty()) out += ' ';
      blank = false;
      if (c == '"' || c == '\'') {
        std::size_t end = i + 1;
        while (end < t_.size() && t_[end] != '\n' && t_[end] != c) end += t_[end] == '\\' ? 2 : 1;
        end = std::min(end, t_.size());
        if (end < t_.size() && t_[end] == c) ++end;
        out.append(t_.substr(i, end - i));
        i = end;
        continue;
      }
      out += c;
      ++i;
    }
    return out;
  }

  // A macro named like a __has_include wrapper: ends in HAS_INCLUDE or has_include, any case.
  static bool is_has_include_wrapper(std::string_view word) {
    constexpr std::string_view kTail = "has_include";
    if (word.size() <= kTail.size()) return false;
    const std::string_view tail = word.substr(word.size() - kTail.size());
    for (std::size_t k = 0; k < kTail.size(); ++k) {
      const char c = tail[k];
      if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != kTail[k]) return false;
    }
    return true;
  }

  std::string_view identifier() {
    const std::size_t start = i_;
    while (i_ < t_.size() && is_ident_char(t_[i_])) ++i_;
    return t_.substr(start, i_ - start);
  }

  // A header name "x" or <x> closed on its line at i_: appended to names, true. Otherwise false
  // and i_ unchanged.
  bool header_name() {
    const char open = at(i_);
    const char close = open == '"' ? '"' : open == '<' ? '>' : '\0';
    if (close == '\0') return false;
    std::size_t stop = i_ + 1;
    while (stop < t_.size() && t_[stop] != close && t_[stop] != '\n') ++stop;
    if (stop >= t_.size() || t_[stop] != close) return false;
    if (stop > i_ + 1) out_.names.emplace_back(t_.substr(i_ + 1, stop - i_ - 1));
    i_ = stop + 1;
    return true;
  }

  // The rest of the line from i_ (for messages), trimmed and shortened.
  std::string rest_of_line() const {
    std::size_t end = t_.find('\n', i_);
    if (end == std::string_view::npos) end = t_.size();
    std::string_view rest = t_.substr(i_, std::min<std::size_t>(end - i_, 120));
    while (!rest.empty() && is_blank(rest.back())) rest.remove_suffix(1);
    return std::string(rest);
  }

  // After '#' (or "%:"): an include directive's header name, or an unresolvable operand; a
  // function-like #define opens `define_` (its name and parameters) up to its line's end.
  void directive() {
    if (at(i_) == '#' || (at(i_) == '%' && at(i_ + 1) == ':')) return;  // "##": not a directive
    skip_blanks();
    const std::string_view keyword = identifier();
    in_define_ = keyword == "define";
    if (in_define_) {
      define_macro();
      return;
    }
    if (keyword != "include" && keyword != "include_next") return;
    skip_blanks();
    if (i_ >= t_.size() || t_[i_] == '\n' || header_name()) return;
    const std::string operand = capture(i_);
    // Appended piece by piece: `"#" + std::string(...)` trips GCC 12's -Wrestrict false positive
    // (GCC bug 105329) in optimised builds.
    std::string directive = "#";
    directive.append(keyword).append(" ").append(operand);
    add_computed(directive_at_, directive, operand);
  }

  // A computed include or include test (IncludeList::computed) at offset `at`.
  void add_computed(std::size_t at, const std::string& directive, const std::string& operand) {
    out_.computed.push_back(std::to_string(line_at(at)) + "\t" + directive + "\t" + operand);
  }

  // `#define NAME(PARAMS)` at i_ (after the keyword): opens define_ for a function-like macro.
  void define_macro() {
    skip_blanks();
    const std::string_view name = identifier();
    if (name.empty()) return;
    if (at(i_) != '(') {  // object-like: an alias of each name in its text; lexed as usual then
      const std::size_t body = i_;
      add_definition(std::string(name), i_);
      for (std::size_t end = t_.find('\n', i_); i_ < std::min(end, t_.size());) {
        if (at(i_) == '"' || at(i_) == '\'') {
          skip_quoted(at(i_));
        } else if (is_ident_start(at(i_))) {
          out_.forwards.push_back(std::string(name) + " " + std::string(identifier()));
        } else {
          ++i_;
        }
      }
      i_ = body;
      return;
    }
    ++i_;
    Define define;
    define.name = std::string(name);
    std::string head = define.name + "(";  // the recorded definition's "NAME(P1,P2)"
    for (;;) {
      skip_blanks();
      const std::string_view parameter = identifier();
      if (!parameter.empty()) define.parameters.emplace_back(parameter);
      head += parameter;
      skip_blanks();
      if (at(i_) == ',') {
        head += ',';
        ++i_;
      } else if (at(i_) == '.' && at(i_ + 1) == '.' && at(i_ + 2) == '.') {
        define.parameters.emplace_back("__VA_ARGS__");
        head += "...";
        i_ += 3;
      } else {
        break;
      }
    }
    if (at(i_) != ')') return;  // not a parameter list NVRTC accepts: lexed as usual
    ++i_;
    add_definition(head + ")", i_);
    const std::size_t end = t_.find('\n', i_);
    define.end = end == std::string_view::npos ? t_.size() : end;
    define_ = std::move(define);
  }

  // Records "HEAD BODY" (IncludeList::defines), the body from `body` to the line's end; a body
  // longer than kMaxDefinitionBody is recorded as kTooLongBody.
  void add_definition(const std::string& head, std::size_t body) {
    std::string text = capture(body);
    if (text.size() > kMaxDefinitionBody) text = std::string(kTooLongBody);
    out_.defines.push_back(text.empty() ? head : head + " " + text);
  }

  bool in_define() const { return define_ && i_ <= define_->end; }

  bool is_parameter(std::string_view word) const {
    return in_define() && std::find(define_->parameters.begin(), define_->parameters.end(), word) !=
                              define_->parameters.end();
  }

  // `( NAME )` at i_ (blanks and comments allowed): NAME, with i_ after the ')'; else empty and
  // i_ unchanged.
  std::string_view lone_identifier_argument() {
    const std::size_t start = i_;
    skip_blanks();
    if (at(i_) == '(') {
      ++i_;
      skip_blanks();
      const std::string_view word = identifier();
      skip_blanks();
      if (!word.empty() && at(i_) == ')') {
        ++i_;
        return word;
      }
    }
    i_ = start;
    return {};
  }

  // `__has_include ( "x" )`: the name counts as an include (its existence changes the program).
  // So does a wrapper's `NAME_HAS_INCLUDE ( "x" )` (CCCL's _CCCL_HAS_INCLUDE). Inside a
  // function-like #define, `__has_include(PARAMETER)` makes it an include-test macro (its calls
  // are resolved by the scan). `__has_include` not called (`#define HI __has_include`) or called
  // with no literal name is unresolvable: the scan cannot know which names its callers probe.
  void has_include(std::string_view keyword) {
    const std::size_t start = i_;
    if (const std::string_view word = lone_identifier_argument(); is_parameter(word)) {
      if (define_->parameters.size() == 1 && word != "__VA_ARGS__") {
        out_.test_macros.push_back(define_->name);
      } else {  // its calls have more than one argument: not listed, so not resolvable
        out_.unresolvable.push_back(line_prefix(start) + "#define " + define_->name + ": " +
                                    std::string(keyword) + "(" + std::string(word) +
                                    "): tests one of several parameters, which the scan does "
                                    "not follow to the macro's callers");
      }
      return;
    }
    i_ = start;
    skip_blanks();
    if (at(i_) != '(') {
      // `defined(__has_include)` and `#ifdef __has_include` only ask whether it exists.
      if (in_define_ && at(i_) != ')' && keyword.starts_with("__has_include")) {
        const std::string rest = rest_of_line();
        out_.unresolvable.push_back(line_prefix(start) + std::string(keyword) +
                                    (rest.empty() ? "" : " ") + rest +
                                    ": __has_include named without a call, so the scan cannot "
                                    "tell which headers it tests");
      }
      return;
    }
    ++i_;
    skip_blanks();
    if (header_name()) return;
    if (at(i_) == ')' || at(i_) == '\n' || i_ >= t_.size()) return;
    const std::string rest = capture(i_);
    std::size_t close = 0;
    for (int depth = 0; close < rest.size(); ++close) {
      if (rest[close] == '(') ++depth;
      if (rest[close] == ')' && depth-- == 0) break;
    }
    const std::string operand = rest.substr(0, close);
    const std::string directive = std::string(keyword) + "(" + operand + ")";
    if (in_define() && mentions_parameter(operand)) {
      out_.unresolvable.push_back(line_prefix(start) + "#define " + define_->name + ": " +
                                  directive +
                                  ": the header name is built from the macro's parameters, "
                                  "which the scan does not follow to its callers");
      return;
    }
    add_computed(start, directive, operand);
  }

  // Whether `text` holds an identifier that is a parameter of the #define being lexed.
  bool mentions_parameter(std::string_view text) const {
    for (std::size_t k = 0; k < text.size();) {
      if (!is_ident_start(text[k])) {
        ++k;
        continue;
      }
      std::size_t end = k;
      while (end < text.size() && is_ident_char(text[end])) ++end;
      if (is_parameter(text.substr(k, end - k))) return true;
      k = end;
    }
    return false;
  }

  // After an identifier `word` that is no keyword of ours: a call is recorded (IncludeList::calls,
  // forwards), with its one header name or identifier, else as "word ?".
  void maybe_call(std::string_view word) {
    if (const std::string_view argument = lone_identifier_argument(); !argument.empty()) {
      if (!is_parameter(argument)) {
        out_.calls.push_back(std::string(word) + " " + std::string(argument));
      } else if (define_->parameters.size() == 1 && argument != "__VA_ARGS__") {
        out_.forwards.push_back(define_->name + " " + std::string(word));
      } else {  // M(a, b) passes b on: M's calls are not listed, "*" makes them unresolvable
        out_.forwards.push_back(define_->name + " " + std::string(word) + " *");
      }
      return;
    }
    const std::size_t start = i_;
    skip_blanks();
    if (at(i_) == '(') {
      ++i_;
      skip_blanks();
      const char open = at(i_);
      std::vector<std::string> names;
      std::swap(names, out_.names);
      const bool named = header_name();
      std::swap(names, out_.names);
      skip_blanks();
      if (named && names.size() == 1 && at(i_) == ')') {
        const char close = open == '"' ? '"' : '>';
        out_.calls.push_back(std::string(word) + " " + open + names.front() + close);
        ++i_;
        return;
      }
      // Any other argument list: unreadable, were `word` an include-test macro. The arguments
      // are lexed as usual.
      out_.calls.push_back(std::string(word) + " ?");
    }
    i_ = start;
  }

  // One token at i_ that is not a directive start: literals are skipped whole, so that "/*" or
  // "//" inside them starts no comment.
  void token() {
    const char c = t_[i_];
    if (c == '"' || c == '\'') {
      skip_quoted(c);
    } else if (is_ident_start(c)) {
      const std::string_view word = identifier();
      if (at(i_) == '"' &&
          (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR")) {
        skip_raw_string();
      } else if (word == "__has_include" || word == "__has_include_next" ||
                 is_has_include_wrapper(word)) {
        has_include(word);
      } else {
        maybe_call(word);
      }
    } else if ((c >= '0' && c <= '9') || (c == '.' && at(i_ + 1) >= '0' && at(i_ + 1) <= '9')) {
      skip_number();
    } else {
      ++i_;
    }
  }

  // A string or character literal; an unterminated one ends at the end of the line.
  void skip_quoted(char quote) {
    ++i_;
    while (i_ < t_.size() && t_[i_] != '\n') {
      if (t_[i_] == '\\') {
        i_ += 2;
        continue;
      }
      if (t_[i_++] == quote) return;
    }
    i_ = std::min(i_, t_.size());
  }

  // R"delim( ... )delim" at the opening quote; an unterminated one runs to the end.
  void skip_raw_string() {
    const std::size_t open = t_.find('(', i_ + 1);
    const std::size_t line_end = t_.find('\n', i_ + 1);
    if (open == std::string_view::npos || open > line_end || open - i_ - 1 > 16) {
      ++i_;  // not a raw string after all: the quote starts an ordinary string
      skip_quoted('"');
      return;
    }
    std::string end = ")";
    end += t_.substr(i_ + 1, open - i_ - 1);
    end += '"';
    const std::size_t close = t_.find(end, open + 1);
    i_ = close == std::string_view::npos ? t_.size() : close + end.size();
  }

  // A pp-number (digit separators and exponent signs included).
  void skip_number() {
    ++i_;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      const char before = t_[i_ - 1];
      const bool exponent_sign = (c == '+' || c == '-') &&
                                 (before == 'e' || before == 'E' || before == 'p' || before == 'P');
      if (c == '\'' && is_ident_char(at(i_ + 1))) {
        i_ += 2;
      } else if (exponent_sign || is_ident_char(c) || c == '.') {
        ++i_;
      } else {
        break;
      }
    }
  }

  struct Define {
    std::string name;
    std::vector<std::string> parameters;
    std::size_t end = 0;  // its line's end
  };

  std::string_view t_;
  const std::vector<std::size_t>& splices_;  // splice_lines's
  std::size_t i_ = 0;
  std::size_t directive_at_ = 0;  // where the last directive's '#' is
  bool in_define_ = false;        // the current line is a #define
  IncludeList& out_;
  std::optional<Define> define_;  // the function-like #define being lexed (to define_->end)
};

void lex_includes(std::string_view text, bool trigraphs, IncludeList& out) {
  std::vector<std::size_t> splices;
  const std::string spliced = splice_lines(text, trigraphs, splices);
  IncludeLexer(spliced, splices, out).run();
}

}  // namespace

IncludeList list_includes(std::string_view text) {
  IncludeList out;
  lex_includes(text, false, out);
  // Trigraphs are replaced in C++03/11/14 modes only: both readings count (a union is safe).
  if (text.find("??") != std::string_view::npos) lex_includes(text, true, out);
  const auto tidy = [](std::vector<std::string>& list) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  };
  tidy(out.names);
  tidy(out.unresolvable);
  tidy(out.test_macros);
  tidy(out.forwards);
  tidy(out.calls);
  tidy(out.defines);
  tidy(out.computed);
  return out;
}

}  // namespace cubby
