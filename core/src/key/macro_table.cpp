// The union of the macro definitions a scan has seen; contract in macro_table.hpp.
#include "key/macro_table.hpp"

#include <algorithm>
#include <array>

#include "key/include_lexer.hpp"

namespace cubby {
namespace {

bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || static_cast<unsigned char>(c) >= 0x80;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

std::string_view name_of(std::string_view definition) {
  std::size_t end = 0;
  while (end < definition.size() && ident_char(definition[end])) ++end;
  return definition.substr(0, end);
}

}  // namespace

std::optional<MacroDefinition> parse_macro_definition(std::string_view text) {
  MacroDefinition out;
  const std::string_view name = name_of(text);
  if (name.empty() || (name.front() >= '0' && name.front() <= '9')) return std::nullopt;
  out.name = std::string(name);
  std::size_t i = name.size();
  if (i < text.size() && text[i] == '(') {
    out.function_like = true;
    const std::size_t close = text.find(')', i);
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view list = text.substr(i + 1, close - i - 1);
    while (!list.empty()) {
      const std::size_t comma = list.find(',');
      std::string_view parameter = trim(list.substr(0, comma));
      if (parameter.ends_with("...")) {
        out.variadic = true;
        parameter = trim(parameter.substr(0, parameter.size() - 3));
        if (parameter.empty()) parameter = "__VA_ARGS__";
      } else if (parameter == "__VA_ARGS__") {
        out.variadic = true;
      }
      if (!parameter.empty()) out.parameters.emplace_back(parameter);
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
    i = close + 1;
  }
  out.body = std::string(trim(text.substr(i)));
  out.too_long = out.body == kTooLongBody;
  return out;
}

std::string definition_of_define_option(std::string_view value) {
  const std::size_t equals = value.find('=');
  if (equals == std::string_view::npos) return std::string(trim(value)) + " 1";
  return std::string(trim(value.substr(0, equals))) + " " +
         std::string(trim(value.substr(equals + 1)));
}

const std::vector<std::string>& fixed_predefined_macros() {
  static const auto* macros = new std::vector<std::string>{
      "__CUDACC__ 1", "__CUDACC_RTC__ 1", "__NVCC__ 1", "__CUDA_ARCH_HAS_FEATURE__(x) 0"};
  return *macros;
}

bool is_variable_predefined_macro(std::string_view name) {
  static constexpr std::array<std::string_view, 16> kNames = {"__CUDA_ARCH__",
                                                              "__CUDA_ARCH_LIST__",
                                                              "__CUDACC_VER_MAJOR__",
                                                              "__CUDACC_VER_MINOR__",
                                                              "__CUDACC_VER_BUILD__",
                                                              "__CUDACC_RDC__",
                                                              "__CUDACC_EWP__",
                                                              "__CUDACC_DEBUG__",
                                                              "__CUDACC_RTC_INT128__",
                                                              "__CUDACC_RTC_FLOAT128__",
                                                              "__FILE__",
                                                              "__LINE__",
                                                              "__COUNTER__",
                                                              "__DATE__",
                                                              "__TIME__",
                                                              "__cplusplus"};
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

void MacroTable::add(std::string_view definition) {
  const std::string_view name = name_of(definition);
  if (name.empty()) return;
  Entry& entry = entries_[name];
  if (std::find(entry.texts.begin(), entry.texts.end(), definition) != entry.texts.end()) return;
  entry.texts.push_back(definition);
  ++added_;
}

const std::vector<MacroDefinition>& MacroTable::find(std::string_view name) {
  static const std::vector<MacroDefinition> kNone;
  const auto found = entries_.find(name);
  if (found == entries_.end()) return kNone;
  Entry& entry = found->second;
  for (; entry.parsed_count < entry.texts.size(); ++entry.parsed_count) {
    if (auto parsed = parse_macro_definition(entry.texts[entry.parsed_count])) {
      entry.parsed.push_back(std::move(*parsed));
    }
  }
  return entry.parsed;
}

}  // namespace cubby
