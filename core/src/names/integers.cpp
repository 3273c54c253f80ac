// Builtin type spellings and integral values: literals, promotions, LP64 widths.
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
  std::string pa = promote(a);  // not const: returned by move
  std::string pb = promote(b);
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

}  // namespace cubby::names
