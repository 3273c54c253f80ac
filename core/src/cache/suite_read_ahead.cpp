// Cache::read_ahead_suite (contract in cubby/cache.hpp): the entries a suite's recipes have now,
// read into the memory tier before the run asks for them.
#include <cstddef>
#include <string>
#include <vector>

#include "cache/entry_check.hpp"
#include "cubby/cache.hpp"
#include "format/recipe.hpp"
#include "storage/local/manifests.hpp"

namespace cubby {
namespace {

// The payload bytes read ahead at most (a quarter of the memory tier's own bound).
constexpr std::size_t kReadAheadBytes = std::size_t{256} << 20;

}  // namespace

Cache::ReadAhead Cache::read_ahead_suite(const std::function<bool()>& stop) {
  ReadAhead done;
  if (config_.suite.empty() || config_.disabled) return done;
  const auto manifest = load_manifest(config_.dir, config_.suite);
  if (!manifest) return {0, ReadAhead::kUnknown};
  if (!manifest->has_value()) return done;
  const std::vector<Recipe>& recipes = (*manifest)->recipes;
  std::size_t looked = 0;
  std::size_t bytes = 0;
  for (const Recipe& recipe : recipes) {
    if (done.read >= config_.memory_entries || bytes >= kReadAheadBytes || (stop && stop())) break;
    const CompileRequest request = request_of(recipe, config_.base_dir);
    Key key;
    try {
      key = key_of(request);
    } catch (const Error&) {
      break;  // no NVRTC or toolkit to key with: compile() says so
    }
    ++looked;
    const std::vector<std::string> names = distinct_names(request.name_expressions);
    // The lookup of memory, then disk (kept in memory), that compile() makes first.
    const Found found = find_local(
        key, "entry", [&names](const Entry& entry) { return validate_entry(entry, names); });
    if (!found.entry) {
      ++done.lacking;  // a header edited since, a bad or evicted entry: compile() makes it
    } else if (found.tier == Source::disk) {
      bytes += found.entry->payload.size();
      ++done.read;
    }
  }
  done.lacking += recipes.size() - looked;
  return done;
}

}  // namespace cubby
