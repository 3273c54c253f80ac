// The AST printed back as text (messages, tests, to_string).
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

NameComponent named(std::string_view name) {
  NameComponent component;
  component.name = std::string(name);
  component.name_hash = name_hash(component.name);
  return component;
}

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
      // A view of a literal: assigning literals to a std::string here trips GCC 12's -Wrestrict
      // false positive (GCC bug 105329) in optimised builds.
      std::string_view suffix;
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

}  // namespace cubby::names

namespace cubby {

using namespace names;  // the folder's own internals

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

}  // namespace cubby
