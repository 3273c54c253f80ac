// Canonicalisation of parsed expressions: standard typedefs, dynamic extents, spellings.
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

// The standard typedefs as NVRTC 13's <cuda/std/cstdint> and <cuda/std/cstddef> define them
// (measured with nvrtcGetLoweredName on sm_90; note intptr_t is `long long`, unlike glibc),
// reachable unqualified, as std:: or as cuda::std::.
std::string_view standard_typedef(std::string_view name) {
  struct Alias {
    std::string_view name;
    std::string_view type;
  };
  static constexpr Alias kAliases[] = {
      {"size_t", "unsigned long"},
      {"ptrdiff_t", "long"},
      {"intptr_t", "long long"},
      {"uintptr_t", "unsigned long long"},
      {"int8_t", "signed char"},
      {"uint8_t", "unsigned char"},
      {"int16_t", "short"},
      {"uint16_t", "unsigned short"},
      {"int32_t", "int"},
      {"uint32_t", "unsigned int"},
      {"int64_t", "long long"},
      {"uint64_t", "unsigned long long"},
      {"intmax_t", "long long"},
      {"uintmax_t", "unsigned long long"},
      {"int_least8_t", "signed char"},
      {"uint_least8_t", "unsigned char"},
      {"int_least16_t", "short"},
      {"uint_least16_t", "unsigned short"},
      {"int_least32_t", "int"},
      {"uint_least32_t", "unsigned int"},
      {"int_least64_t", "long long"},
      {"uint_least64_t", "unsigned long long"},
      {"int_fast8_t", "signed char"},
      {"uint_fast8_t", "unsigned char"},
      {"int_fast16_t", "short"},
      {"uint_fast16_t", "unsigned short"},
      {"int_fast32_t", "int"},
      {"uint_fast32_t", "unsigned int"},
      {"int_fast64_t", "long long"},
      {"uint_fast64_t", "unsigned long long"},
      {"max_align_t", "long double"},
  };
  if (!name.ends_with("_t")) return {};  // every alias does
  for (const Alias& alias : kAliases) {
    if (alias.name == name) return alias.type;
  }
  return {};
}

// True when `parts[0..n-1]` (the qualification) is empty, `std`, or `cuda::std` (with an
// optional inline namespace such as `__4`).
bool std_qualified(const QualifiedName& name) {
  const auto& p = name.parts;
  const std::size_t n = p.size() - 1;
  auto plain = [&](std::size_t i) { return !p[i].templated; };
  for (std::size_t i = 0; i < n; ++i) {
    if (!plain(i)) return false;
  }
  if (n == 0) return true;
  std::size_t i = 0;
  if (p[0].name == "cuda") i = 1;
  if (i >= n || p[i].name != "std") return false;
  ++i;
  if (i < n && p[i].name.rfind("__", 0) == 0) ++i;
  return i == n;
}

NameArg dynamic_extent_value() {
  NameArg value;
  value.kind = NameArg::Kind::value;
  value.magnitude = std::numeric_limits<std::uint64_t>::max();
  value.value_type = "unsigned long";
  return value;
}

void canonicalize(QualifiedName& name, int depth);

void canonicalize(NameArg& arg, int depth) {
  if (depth > kMaxDepth) return;
  if (arg.kind != NameArg::Kind::type && arg.kind != NameArg::Kind::name) return;
  auto& parts = arg.name.parts;
  if (parts.empty()) return;
  canonicalize(arg.name, depth + 1);
  const NameComponent& last = parts.back();
  if (!std_qualified(arg.name)) return;
  if (!last.templated) {
    if (const std::string_view builtin = standard_typedef(last.name); !builtin.empty()) {
      parts.assign(1, named(std::string(builtin)));
      arg.kind = NameArg::Kind::type;
      return;
    }
    if (last.name == "dynamic_extent" && arg.kind == NameArg::Kind::name) {
      arg = dynamic_extent_value();
    }
    return;
  }
  // dextents<I, N> -> extents<I, dynamic_extent x N>; dims<N, I = size_t> likewise.
  const bool dextents = last.name == "dextents" && last.args.size() == 2;
  const bool dims = last.name == "dims" && (last.args.size() == 1 || last.args.size() == 2);
  if (!dextents && !dims) return;
  const NameArg& rank_arg = dextents ? last.args[1] : last.args[0];
  if (rank_arg.kind != NameArg::Kind::value || rank_arg.negative || rank_arg.magnitude > 64) {
    return;
  }
  NameComponent extents = named("extents");
  extents.templated = true;
  if (dextents) {
    extents.args.push_back(last.args[0]);
  } else if (last.args.size() == 2) {
    extents.args.push_back(last.args[1]);
  } else {
    NameArg index;
    index.kind = NameArg::Kind::type;
    index.name.parts.push_back(named("unsigned long"));
    extents.args.push_back(std::move(index));
  }
  for (std::uint64_t i = 0; i < rank_arg.magnitude; ++i) {
    extents.args.push_back(dynamic_extent_value());
  }
  parts.back() = std::move(extents);
}

void canonicalize(QualifiedName& name, int depth) {
  if (depth > kMaxDepth) return;
  for (NameComponent& component : name.parts) {
    for (NameArg& arg : component.args) canonicalize(arg, depth + 1);
  }
}

}  // namespace cubby::names
