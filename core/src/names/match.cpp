// The structural matcher: the cost of aligning an expression with a candidate, unique best.
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

// Costs of the canonicalisations, so the most literal match wins (see match_name).
constexpr int kElideCost = 1;       // a namespace of the symbol absent from the expression
constexpr int kDefaultCost = 1;     // template arguments filled from the symbol
constexpr int kLiteralCost = 1;     // a value of another integral type (`4` for `4ul`)
constexpr int kEnumeratorCost = 2;  // an enumerator by name for a value of its enumeration

int qualified_score(const QualifiedName& e, const QualifiedName& c, int depth);

int arg_score(const NameArg& e, const NameArg& c, int depth) {
  if (depth > kMaxDepth) return -1;
  using Kind = NameArg::Kind;
  if (e.kind == Kind::raw || c.kind == Kind::raw) {
    return e.kind == c.kind && e.raw == c.raw ? 0 : -1;
  }
  if (c.kind == Kind::value) {
    if (e.kind == Kind::value) {
      if (e.negative != c.negative || e.magnitude != c.magnitude) return -1;
      if (e.value_type.empty() != c.value_type.empty()) return -1;
      if (c.value_type.empty()) return qualified_score(e.name, c.name, depth + 1);
      return e.value_type == c.value_type ? 0 : kLiteralCost;
    }
    if (e.kind != Kind::name || !c.value_type.empty() || e.name.parts.size() < 2) return -1;
    // An enumerator `scope::X` for a value of enumeration `enum`: scoped (scope is the
    // enumeration) or unscoped (scope is the enumeration's scope).
    QualifiedName scope = e.name;
    scope.parts.pop_back();
    if (scope.parts.back().templated) return -1;
    const int scoped = qualified_score(scope, c.name, depth + 1);
    if (scoped >= 0) return kEnumeratorCost + scoped;
    if (c.name.parts.size() >= 2) {
      QualifiedName enum_scope = c.name;
      enum_scope.parts.pop_back();
      const int unscoped = qualified_score(scope, enum_scope, depth + 1);
      if (unscoped >= 0) return kEnumeratorCost + unscoped;
    }
    return -1;
  }
  // c is a type (the demangler never prints a bare name).
  if (e.kind == Kind::value) return -1;
  if (e.is_const != c.is_const || e.is_volatile != c.is_volatile) return -1;
  if (e.declarator != c.declarator) return -1;
  return qualified_score(e.name, c.name, depth + 1);
}

int component_score(const NameComponent& e, const NameComponent& c, int depth) {
  if (e.name_hash != 0 && c.name_hash != 0 && e.name_hash != c.name_hash) return -1;
  if (e.templated != c.templated || e.name != c.name) return -1;
  if (e.args.size() > c.args.size()) return -1;
  int total = e.args.size() < c.args.size() ? kDefaultCost : 0;
  for (std::size_t i = 0; i < e.args.size(); ++i) {
    const int s = arg_score(e.args[i], c.args[i], depth + 1);
    if (s < 0) return -1;
    total += s;
  }
  return total;
}

// Aligns the expression's components with the symbol's: in order, the last with the last, each
// symbol component the expression lacks elided (namespaces only). Dynamic programming over
// (expression index, symbol index); -1 when no alignment exists.
int qualified_score(const QualifiedName& e, const QualifiedName& c, int depth) {
  if (depth > kMaxDepth) return -1;
  const std::size_t n = e.parts.size();
  const std::size_t m = c.parts.size();
  if (n == 0 || m == 0 || n > m) return -1;
  // The last components always align (only namespaces before them are elided): most
  // mismatches end here, before any table is built.
  const int last = component_score(e.parts[n - 1], c.parts[m - 1], depth + 1);
  if (last < 0) return -1;
  if (n == 1 && m == 1) return last;
  if (n == m) {
    int total = last;
    for (std::size_t i = 0; i + 1 < n; ++i) {
      const int s = component_score(e.parts[i], c.parts[i], depth + 1);
      if (s < 0) return -1;
      total += s;
    }
    return total;
  }
  // When every component before the last is a plain name on both sides (namespaces), each
  // aligned pair scores 0 and each elided one kElideCost: an alignment exists exactly when the
  // expression's prefix is a subsequence of the symbol's (found greedily), at the same cost the
  // table below would give.
  {
    bool plain = true;
    for (std::size_t i = 0; i + 1 < n && plain; ++i) plain = !e.parts[i].templated;
    for (std::size_t j = 0; j + 1 < m && plain; ++j) plain = !c.parts[j].templated;
    if (plain) {
      std::size_t i = 0;
      for (std::size_t j = 0; j + 1 < m && i + 1 < n; ++j) {
        if (component_score(e.parts[i], c.parts[j], depth + 1) == 0) ++i;
      }
      if (i + 1 < n) return -1;
      return last + static_cast<int>(m - n) * kElideCost;
    }
  }
  // best[i][j]: cost of aligning e[i..] with c[j..]; on the stack for the usual sizes.
  constexpr int kNone = std::numeric_limits<int>::max();
  constexpr std::size_t kSmall = 64;
  const std::size_t cells = (n + 1) * (m + 1);
  int small[kSmall];
  std::vector<int> large;
  int* best = small;
  if (cells > kSmall) {
    large.resize(cells);
    best = large.data();
  }
  std::fill(best, best + cells, kNone);
  auto at = [&](std::size_t i, std::size_t j) -> int& { return best[i * (m + 1) + j]; };
  at(n, m) = 0;
  for (std::size_t j = m; j-- > 0;) {
    for (std::size_t i = n; i-- > 0;) {
      if (n - i > m - j) continue;
      int result = kNone;
      if (at(i + 1, j + 1) != kNone) {
        const int s =
            (i + 1 == n && j + 1 == m) ? last : component_score(e.parts[i], c.parts[j], depth + 1);
        if (s >= 0) result = s + at(i + 1, j + 1);
      }
      if (j + 1 < m && !c.parts[j].templated && at(i, j + 1) != kNone) {
        result = std::min(result, kElideCost + at(i, j + 1));
      }
      at(i, j) = result;
    }
  }
  return at(0, 0) == kNone ? -1 : at(0, 0);
}

// Names of the expression (classes, enumerators, typedefs) no candidate mentions: the likely
// reason nothing matched.
void unknown_names(const QualifiedName& name, const std::vector<NameCandidate>& candidates,
                   std::vector<std::string>& out, int depth) {
  if (depth > kMaxDepth) return;
  for (const NameComponent& component : name.parts) {
    for (const NameArg& arg : component.args) {
      if (arg.kind != NameArg::Kind::name && arg.kind != NameArg::Kind::type) continue;
      const std::string& last = arg.name.parts.back().name;
      if (arg.name.parts.size() == 1 && last.find(' ') != std::string::npos) continue;
      const bool mentioned =
          std::any_of(candidates.begin(), candidates.end(), [&](const NameCandidate& candidate) {
            std::size_t at = 0;
            while ((at = candidate.demangled.find(last, at)) != std::string::npos) {
              const std::size_t end = at + last.size();
              const bool starts = at == 0 || !is_ident_char(candidate.demangled[at - 1]);
              const bool ends =
                  end == candidate.demangled.size() || !is_ident_char(candidate.demangled[end]);
              if (starts && ends) return true;
              at = end;
            }
            return false;
          });
      if (!mentioned) {
        std::string text;
        print(arg.name, text, 0);
        if (std::find(out.begin(), out.end(), text) == out.end()) out.push_back(text);
      }
      unknown_names(arg.name, candidates, out, depth + 1);
    }
  }
}

}  // namespace cubby::names

namespace cubby {

using namespace names;  // the folder's own internals

int match_score(const QualifiedName& expression, const QualifiedName& symbol) {
  return qualified_score(expression, symbol, 0);
}

NameMatch match_name(const ParsedName& expression, const std::vector<NameCandidate>& candidates) {
  NameMatch result;
  int best = std::numeric_limits<int>::max();
  std::vector<std::size_t> winners;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const int score = qualified_score(expression.name, candidates[i].parsed.name, 0);
    if (score < 0 || score > best) continue;
    if (score < best) {
      best = score;
      winners.clear();
    }
    winners.push_back(i);
  }
  if (winners.size() == 1) {
    result.resolved = true;
    result.candidate = winners[0];
    result.inexactness = best;
    return result;
  }
  const std::string text = to_string(expression.name);
  if (winners.size() > 1) {
    result.reason = "ambiguous: " + std::to_string(winners.size()) + " symbols match `" + text +
                    "` equally well (";
    for (std::size_t k = 0; k < winners.size() && k < 3; ++k) {
      result.reason.append(k == 0 ? "`" : ", `")
          .append(candidates[winners[k]].demangled)
          .append("`");
    }
    result.reason.append(winners.size() > 3 ? ", ...)" : ")");
    result.reason.append(
        "; spell out every template argument (defaults included) with builtin types");
    return result;
  }
  const std::string& base = expression.name.parts.back().name;
  std::size_t same_name = 0;
  const NameCandidate* example = nullptr;
  for (const NameCandidate& candidate : candidates) {
    if (!candidate.parsed.name.parts.empty() && candidate.parsed.name.parts.back().name == base) {
      ++same_name;
      if (example == nullptr) example = &candidate;
    }
  }
  std::vector<std::string> unknown;
  unknown_names(expression.name, candidates, unknown, 0);
  result.reason = "no symbol matches `" + text + "`";
  if (same_name == 0) {
    result.reason.append(": the module has no kernel or variable named `" + base + "`");
  } else {
    result.reason.append(
        ": " + std::to_string(same_name) + " symbol" + (same_name == 1 ? "" : "s") + " named `" +
        base + "` exist, none with these template arguments (e.g. `" + example->demangled + "`)");
  }
  if (!unknown.empty()) {
    result.reason.append("; `" + unknown.front() +
                         "` appears in no symbol: a typedef, alias or enumerator of the program "
                         "that mangling erased cannot be seen through; spell it as its "
                         "underlying type or value");
  }
  return result;
}

}  // namespace cubby
