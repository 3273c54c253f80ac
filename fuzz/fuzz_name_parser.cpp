// libFuzzer target: the name-expression, demangled-name and mangled-name parsers, the demangler
// and the matcher must never crash, hang or read out of bounds on any input.
// Input: one selector byte, then text; for the matcher, two texts separated by a NUL byte.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/demangle.hpp"
#include "names/mangled_name.hpp"
#include "names/name_match.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 5) {
    case 0: {
      auto parsed = cubby::parse_name_expression(text);
      if (parsed.ok()) static_cast<void>(cubby::to_string(parsed->name));
      break;
    }
    case 1: {
      auto parsed = cubby::parse_demangled_name(text);
      if (parsed.ok()) static_cast<void>(cubby::to_string(parsed->name));
      break;
    }
    case 2: {
      auto demangled = cubby::demangle(text);
      if (demangled.ok()) static_cast<void>(cubby::parse_demangled_name(*demangled));
      break;
    }
    case 4: {
      auto parsed = cubby::parse_mangled_name(text);
      if (parsed.ok()) static_cast<void>(cubby::to_string(parsed->name));
      break;
    }
    default: {
      const std::size_t split = text.find('\0');
      if (split == std::string_view::npos) break;
      auto expression = cubby::parse_name_expression(text.substr(0, split));
      auto symbol = cubby::parse_demangled_name(text.substr(split + 1));
      if (!expression.ok() || !symbol.ok()) break;
      std::vector<cubby::NameCandidate> candidates(2);
      candidates[0].parsed = *symbol;
      candidates[0].demangled = std::string(text.substr(split + 1));
      candidates[1].parsed = *expression;
      static_cast<void>(cubby::match_name(*expression, candidates));
      break;
    }
  }
  return 0;
}
