// A scan's computed includes; contract in computed_includes.hpp.
#include "key/computed_includes.hpp"

namespace cubby {

bool parse_computed_site(std::string_view entry, ComputedSite& out) {
  const std::size_t first = entry.find('\t');
  if (first == std::string_view::npos) return false;
  const std::size_t second = entry.find('\t', first + 1);
  if (second == std::string_view::npos) return false;
  out.line = std::string(entry.substr(0, first));
  out.directive = std::string(entry.substr(first + 1, second - first - 1));
  out.operand = std::string(entry.substr(second + 1));
  return true;
}

ComputedIncludes::ComputedIncludes(const std::vector<std::string>& defines) {
  for (const std::string& text : fixed_predefined_macros()) table_.add(text);
  for (const std::string& value : defines) {
    table_.add(owned_.emplace_back(definition_of_define_option(value)));
  }
}

void ComputedIncludes::add_definitions(const std::vector<std::string>& texts) {
  for (const std::string& text : texts) table_.add(text);
}

const OperandNames& ComputedIncludes::expand(const std::string& operand) {
  Known& known = known_[operand];
  if (known.definitions == 0 || known.definitions != table_.size()) {
    known.definitions = table_.size();
    known.names = expand_header_operand(
        operand, [this](std::string_view name) -> const std::vector<MacroDefinition>& {
          return table_.find(name);
        });
    consulted_.insert(known.names.consulted.begin(), known.names.consulted.end());
  }
  return known.names;
}

bool ComputedIncludes::holds_unknown_macro(const OperandNames& names) {
  for (const std::string& identifier : names.consulted) {
    if (!table_.find(identifier).empty()) continue;
    for (const std::string& name : names.names) {
      if (name.find(identifier) != std::string::npos) return true;
    }
  }
  return false;
}

}  // namespace cubby
