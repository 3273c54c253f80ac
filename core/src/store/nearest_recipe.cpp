// The recorded recipe nearest to a program; contract in store/nearest_recipe.hpp.
#include "store/nearest_recipe.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <tuple>

namespace cubby {
namespace {

constexpr std::size_t kMaxLineBytes = 200;

// Line `index` (0-based) of `text`, "" past its end.
std::string_view line_of(std::string_view text, std::size_t index) {
  for (std::size_t i = 0; i < index; ++i) {
    const std::size_t end = text.find('\n');
    if (end == std::string_view::npos) return {};
    text.remove_prefix(end + 1);
  }
  return text.substr(0, std::min(text.find('\n'), text.size()));
}

// The 0-based index of the first line where `a` and `b` differ (their line count when one is a
// prefix of the other and they still differ).
std::size_t first_differing_line(std::string_view a, std::string_view b) {
  const std::size_t same = static_cast<std::size_t>(
      std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
  return static_cast<std::size_t>(std::count(a.begin(), a.begin() + static_cast<long>(same), '\n'));
}

std::string cut(std::string_view line) { return std::string(line.substr(0, kMaxLineBytes)); }

}  // namespace

std::optional<NearestRecipe> nearest_recipe(const std::vector<CompileRequest>& recipes,
                                            const CompileRequest& request) {
  if (recipes.empty()) return std::nullopt;
  const auto sorted = [](std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  };
  const std::vector<std::string> names = sorted(request.name_expressions);
  const auto alike = [&](const CompileRequest& recipe) {
    return recipe.options == request.options && sorted(recipe.name_expressions) == names;
  };
  const bool any_alike = std::any_of(recipes.begin(), recipes.end(), alike);
  const CompileRequest* best = nullptr;
  std::tuple<std::size_t, std::size_t> best_rank{};  // (first differing line, -length gap)
  for (const CompileRequest& recipe : recipes) {
    if (any_alike && !alike(recipe)) continue;
    if (recipe.source == request.source) {
      NearestRecipe found;
      found.program_name = recipe.program_name;
      found.same_request = alike(recipe);
      found.same_source = !found.same_request;
      return found;
    }
    const std::size_t line = first_differing_line(recipe.source, request.source);
    const std::size_t gap = recipe.source.size() > request.source.size()
                                ? recipe.source.size() - request.source.size()
                                : request.source.size() - recipe.source.size();
    const std::tuple<std::size_t, std::size_t> rank{line, ~gap};
    if (best == nullptr || rank > best_rank) {
      best = &recipe;
      best_rank = rank;
    }
  }
  NearestRecipe found;
  found.program_name = best->program_name;
  const std::size_t index = std::get<0>(best_rank);
  found.line = index + 1;
  found.recorded_line = cut(line_of(best->source, index));
  found.line_now = cut(line_of(request.source, index));
  return found;
}

}  // namespace cubby
