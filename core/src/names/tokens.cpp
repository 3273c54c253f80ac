// Tokens of name expressions and demangled names (one table lookup per character).
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
    } else if (i + 1 < text.size() &&
               ((c == ':' && text[i + 1] == ':') || (c == '&' && text[i + 1] == '&') ||
                ((c == '=' || c == '!') && text[i + 1] == '='))) {
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

}  // namespace cubby::names
