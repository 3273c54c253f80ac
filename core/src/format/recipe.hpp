// Recipes and suite manifests: what it takes to compile an entry again, recorded per suite (a
// test binary, a pytest session, or CUBBY_SUITE) under a name that survives key changes, so that
// `cubby warm` and the prefetch of the harness and the pytest plugin can compile what a suite will
// ask for before it asks, also after a toolchain upgrade or a header edit changed every key.
//
// A recipe holds the request, not its key inputs: the header *paths* the program read when it
// was recorded (to report a deleted one), never their contents; the key is derived again when
// the recipe is warmed. Pure encoding, no file access.
//
// Grammar (integers little-endian):
//   manifest := magic "CUBBYMAN" (8) | u32 version (kManifestFormatVersion) | str suite
//               | list paths | u32 lists | path_set{lists} | u32 count | entry{count} | checksum
//   path_set := u32 count | u32 index into paths{count}
//   entry    := str program_name | str source | str arch | str source_dir
//               | list options | list name_expressions | u32 index into the path_sets
//   recipe   := str program_name | str source | str arch | str source_dir
//               | list options | list name_expressions | list header_paths
//   list     := u32 count | str{count}
//   str      := u32 length | bytes{length}
//   checksum := XXH3-128 of every byte before it (16 bytes)
// A manifest holds each header path once and each distinct header list once: the recipes of one
// suite read mostly the same headers (CuPy's 393 recorded recipes: 5 distinct lists of up to 970
// paths, 959 distinct paths). Format 1, which repeated every recipe's list (`u32 count |
// recipe{count}` after the suite), made CuPy's manifest 47 MB, 0.5 s of CPU for each prefetch
// beside a warm run to read; format 2 makes it 0.9 MB. Format 1 is still read. The worker protocol
// of `cubby warm` sends a bare `recipe`, and a recipe's identity (recipe_id) is the hash of that
// encoding.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/error.hpp"
#include "cubby/key.hpp"
#include "cubby/nvrtc.hpp"

namespace cubby {

inline constexpr std::uint32_t kManifestFormatVersion = 2;
// The most recipes a manifest keeps (the first ones in request order); more are dropped.
inline constexpr std::size_t kMaxManifestRecipes = 100'000;

// A recipe's header paths, shared by the recipes of a decoded manifest that read the same
// headers (one list of ~960 paths for hundreds of CuPy's recipes, not one each). Immutable.
class HeaderPaths {
 public:
  HeaderPaths() = default;
  // NOLINTNEXTLINE(google-explicit-constructor): a list of paths is a HeaderPaths
  HeaderPaths(std::vector<std::string> paths)
      : list_(std::make_shared<const std::vector<std::string>>(std::move(paths))) {}
  HeaderPaths(std::initializer_list<std::string> paths)
      : HeaderPaths(std::vector<std::string>(paths)) {}

  const std::vector<std::string>& list() const { return list_ ? *list_ : kNone; }
  // The same for every copy of this list (a memo's key: cubby warm checks a list once).
  const void* identity() const { return list_.get(); }

  friend bool operator==(const HeaderPaths& a, const HeaderPaths& b) {
    return a.list_ == b.list_ || a.list() == b.list();
  }

 private:
  static inline const std::vector<std::string> kNone;
  std::shared_ptr<const std::vector<std::string>> list_;
};

struct Recipe {
  std::string program_name;
  std::string source;
  std::string arch;  // as requested: empty means the default of the process that compiles it
  std::string source_dir;
  std::vector<std::string> options;
  std::vector<std::string> name_expressions;
  HeaderPaths header_paths;  // user headers it read when recorded (resolved paths)

  friend bool operator==(const Recipe&, const Recipe&) = default;
};

struct Manifest {
  std::string suite;
  std::vector<Recipe> recipes;  // in the order the suite first asked for them, no two equal
};

// The recipe of `request`; `inputs` (its key inputs) give the header paths. With a `base_dir`
// (Config::base_dir), paths under it are recorded as "${CUBBY_BASE_DIR}/..." by the key's own
// rule (relativize_paths: source folder, program name, options, header paths), so the recipes of
// one checkout warm another.
Recipe recipe_of(const CompileRequest& request, const KeyInputs& inputs,
                 const std::filesystem::path& base_dir = {});
// The request that compiles `recipe` again, "${CUBBY_BASE_DIR}" read as `base_dir` (left as it is
// without one).
CompileRequest request_of(const Recipe& recipe, const std::filesystem::path& base_dir = {});
// The recipe's header paths, "${CUBBY_BASE_DIR}" read as `base_dir`.
std::vector<std::string> header_paths_of(const Recipe& recipe,
                                         const std::filesystem::path& base_dir = {});
// Identity of a recipe: XXH3-128 of its encoding (what merge_recipes de-duplicates by).
std::array<std::uint8_t, 16> recipe_id(const Recipe& recipe);

std::string encode_recipe(const Recipe& recipe);
// Errc::corrupt for bytes that are not exactly one recipe.
Result<Recipe> decode_recipe(std::string_view bytes);

std::string encode_manifest(const Manifest& manifest);
// Errc::corrupt (bad magic, checksum, truncation, an index out of range; a version newer than
// kManifestFormatVersion, with a message that says a newer cubby wrote it), never a crash.
Result<Manifest> decode_manifest(std::string_view bytes);

// `recent` (one run's recipes in request order) followed by the recipes of `older` not in it,
// without duplicates, at most kMaxManifestRecipes: the next warm compiles the recipes a suite
// needs first, first, and keeps those a filtered run did not ask for.
std::vector<Recipe> merge_recipes(const std::vector<Recipe>& recent,
                                  const std::vector<Recipe>& older);

// The remote tier's key of suite `suite`'s manifest (domain-tagged: never a compile or blob key).
Key manifest_key(std::string_view suite);

// A suite's keys: the key each of its recipes had when a run last asked for it, the most recent
// first, one per recipe (by recipe_id). The remote holds them for a fresh runner's read-ahead
// (storage/remote/read_ahead.hpp), which fetches those entries before the run asks for them; a
// key that is stale (a header edited since) only costs a fetch, never a wrong kernel: an entry
// is used only under the key the run derives itself.
//   keys := magic "CUBBYKEY" (8) | u32 version (kSuiteKeysFormatVersion) | str suite
//           | u32 count | (recipe id (16) | key (16)){count} | checksum (XXH3-128, 16)
inline constexpr std::uint32_t kSuiteKeysFormatVersion = 1;

struct RecipeKey {
  std::array<std::uint8_t, 16> recipe{};  // recipe_id
  Key key;

  friend bool operator==(const RecipeKey&, const RecipeKey&) = default;
};

struct SuiteKeys {
  std::string suite;
  std::vector<RecipeKey> keys;  // the most recent first, no two of one recipe
};

std::string encode_suite_keys(const SuiteKeys& keys);
// Errc::corrupt (bad magic, checksum, truncation, a newer version), never a crash.
Result<SuiteKeys> decode_suite_keys(std::string_view bytes);
// `recent` followed by the pairs of `older` whose recipe is not in it, one per recipe (the first
// of each), at most kMaxManifestRecipes.
std::vector<RecipeKey> merge_suite_keys(const std::vector<RecipeKey>& recent,
                                        const std::vector<RecipeKey>& older);
// The remote tier's key of suite `suite`'s keys (domain-tagged like manifest_key).
Key suite_keys_key(std::string_view suite);

}  // namespace cubby
