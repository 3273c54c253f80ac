#include "format/recipe.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "util/bytes.hpp"
#include "util/hash.hpp"

namespace cubby {
namespace {

constexpr std::string_view kMagic = "CUBBYMAN";
constexpr std::string_view kKeysMagic = "CUBBYKEY";
constexpr std::size_t kChecksumBytes = 16;
// The fewest bytes a recipe (and a format 2 manifest entry) takes: seven counts or lengths.
constexpr std::size_t kMinRecipeBytes = 7 * 4;

void put_str(std::string& out, std::string_view text) {
  put_le(out, static_cast<std::uint32_t>(text.size()));
  out.append(text);
}

void put_list(std::string& out, const std::vector<std::string>& list) {
  put_le(out, static_cast<std::uint32_t>(list.size()));
  for (const std::string& item : list) put_str(out, item);
}

// The fields a recipe and a manifest entry share (all but the header paths).
void put_request_fields(std::string& out, const Recipe& recipe) {
  put_str(out, recipe.program_name);
  put_str(out, recipe.source);
  put_str(out, recipe.arch);
  put_str(out, recipe.source_dir);
  put_list(out, recipe.options);
  put_list(out, recipe.name_expressions);
}

void put_recipe(std::string& out, const Recipe& recipe) {
  put_request_fields(out, recipe);
  put_list(out, recipe.header_paths.list());
}

// Reads the grammar's fields from `bytes`; every read checks what is left first, so a count or
// length larger than the input is a failure, never an allocation.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  bool u32(std::uint32_t& value) {
    if (bytes_.size() - pos_ < 4) return false;
    value = load_le<std::uint32_t>(bytes_, pos_);
    pos_ += 4;
    return true;
  }
  bool str(std::string& value) {
    std::uint32_t size = 0;
    if (!u32(size) || bytes_.size() - pos_ < size) return false;
    value.assign(bytes_.substr(pos_, size));
    pos_ += size;
    return true;
  }
  bool list(std::vector<std::string>& value) {
    std::uint32_t size = 0;
    if (!count(size, 4)) return false;  // each item >= 4 bytes
    value.resize(size);
    for (std::string& item : value) {
      if (!str(item)) return false;
    }
    return true;
  }
  // A count of items of at least `item_bytes` each that the bytes left can hold.
  bool count(std::uint32_t& value, std::size_t item_bytes) {
    return u32(value) && value <= (bytes_.size() - pos_) / item_bytes;
  }
  bool request_fields(Recipe& value) {
    return str(value.program_name) && str(value.source) && str(value.arch) &&
           str(value.source_dir) && list(value.options) && list(value.name_expressions);
  }
  bool recipe(Recipe& value) {
    std::vector<std::string> paths;
    if (!request_fields(value) || !list(paths)) return false;
    value.header_paths = std::move(paths);
    return true;
  }
  std::size_t left() const { return bytes_.size() - pos_; }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

// `bytes` without its trailing XXH3-128 checksum, when it starts with `magic` and a version this
// cubby reads (<= `newest`) and the checksum matches; `what` names the format in the message.
Result<std::string_view> checked_body(std::string_view bytes, std::string_view magic,
                                      std::uint32_t newest, std::string_view what) {
  if (bytes.size() < magic.size() + 4 + kChecksumBytes || !bytes.starts_with(magic)) {
    return fail(Errc::corrupt, "not a cubby ", what, " (bad magic or too short)");
  }
  const std::uint32_t version = load_le<std::uint32_t>(bytes, magic.size());
  if (version > newest) {
    return fail(Errc::corrupt, "written by a newer cubby (", what, " format ",
                std::to_string(version), ", this one reads up to ", std::to_string(newest),
                "); run that cubby's `cubby warm`, or delete the file to record it again");
  }
  const std::string_view body = bytes.substr(0, bytes.size() - kChecksumBytes);
  const auto checksum = hash128(body);
  if (bytes.substr(body.size()) !=
      std::string_view(reinterpret_cast<const char*>(checksum.data()), checksum.size())) {
    return fail(Errc::corrupt, what, " checksum mismatch (truncated or damaged)");
  }
  return body.substr(magic.size() + 4);
}

// `recent` followed by the items of `older`, the first item of each recipe (`id_of` gives an
// item's recipe id), at most kMaxManifestRecipes: how manifests and suite keys merge.
template <class Item, class IdOf>
std::vector<Item> first_of_each(const std::vector<Item>& recent, const std::vector<Item>& older,
                                IdOf id_of) {
  std::vector<Item> merged;
  std::set<std::array<std::uint8_t, 16>> seen;
  for (const auto* list : {&recent, &older}) {
    for (const Item& item : *list) {
      if (merged.size() == kMaxManifestRecipes) return merged;
      if (seen.insert(id_of(item)).second) merged.push_back(item);
    }
  }
  return merged;
}

// The remote key of a suite's value of kind `tag`: the hash of both, length-prefixed (a domain
// no compile or blob key shares).
Key suite_value_key(std::string_view tag, std::string_view suite) {
  std::string fields;
  put_str(fields, tag);
  put_str(fields, suite);
  Key key;
  key.bytes = hash128(fields);
  return key;
}

// What opens a manifest and a suite key list: magic, version, suite, item count.
std::string header(std::string_view magic, std::uint32_t version, std::string_view suite,
                   std::size_t count) {
  std::string out(magic);
  put_le(out, version);
  put_str(out, suite);
  put_le(out, static_cast<std::uint32_t>(count));
  return out;
}

// The suite and item count after checked_body's magic and version; false when damaged or over
// kMaxManifestRecipes.
bool read_header(Reader& reader, std::string& suite, std::uint32_t& count) {
  return reader.str(suite) && reader.u32(count) && count <= kMaxManifestRecipes;
}

void put_checksum(std::string& out) {
  const auto checksum = hash128(out);
  out.append(reinterpret_cast<const char*>(checksum.data()), checksum.size());
}

// `text` with the kBaseDirMarker that starts at `at` replaced by `base_dir` (as it is without a
// base folder or a marker there).
std::string expand_base_dir(const std::string& text, std::size_t at,
                            const std::filesystem::path& base_dir) {
  if (base_dir.empty() || text.compare(at, kBaseDirMarker.size(), kBaseDirMarker) != 0) {
    return text;
  }
  std::string base = base_dir.lexically_normal().string();
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  std::string expanded = text;
  expanded.replace(at, kBaseDirMarker.size(), base);
  return expanded;
}

// The recipes of a format 1 manifest (each with its own header list).
bool read_recipes_v1(Reader& reader, std::vector<Recipe>& recipes) {
  std::uint32_t count = 0;
  if (!reader.count(count, kMinRecipeBytes) || count > kMaxManifestRecipes) return false;
  recipes.resize(count);
  return std::all_of(recipes.begin(), recipes.end(),
                     [&](Recipe& recipe) { return reader.recipe(recipe); });
}

// The recipes of a format 2 manifest: the path table, the header lists (each shared by the
// recipes that name it), the entries; every index checked against its table. Format 2 is read only
// as encode_manifest writes it (decoding is exact): every path and every list used, each first
// used in table order, no path and no list twice.
bool read_recipes_v2(Reader& reader, std::vector<Recipe>& recipes) {
  std::vector<std::string> paths;
  std::uint32_t list_count = 0;
  if (!reader.list(paths) || !reader.count(list_count, 4)) return false;
  std::vector<HeaderPaths> lists;
  lists.reserve(list_count);
  std::unordered_set<std::string_view> distinct_paths;
  std::set<std::vector<std::uint32_t>> distinct_lists;
  std::uint32_t next_path = 0;  // the first path no list has used yet
  for (std::uint32_t i = 0; i < list_count; ++i) {
    std::uint32_t size = 0;
    if (!reader.count(size, 4)) return false;
    std::vector<std::uint32_t> indexes(size);
    std::vector<std::string> list(size);
    for (std::uint32_t j = 0; j < size; ++j) {
      std::uint32_t& index = indexes[j];
      if (!reader.u32(index) || index > next_path || index >= paths.size()) return false;
      if (index == next_path && !distinct_paths.insert(paths[next_path++]).second) return false;
      list[j] = paths[index];
    }
    if (!distinct_lists.insert(std::move(indexes)).second) return false;
    lists.emplace_back(std::move(list));
  }
  std::uint32_t count = 0;
  if (next_path != paths.size() || !reader.count(count, kMinRecipeBytes) ||
      count > kMaxManifestRecipes) {
    return false;
  }
  recipes.resize(count);
  std::uint32_t next_list = 0;  // likewise for the lists
  for (Recipe& recipe : recipes) {
    std::uint32_t list = 0;
    if (!reader.request_fields(recipe) || !reader.u32(list) || list > next_list ||
        list >= lists.size()) {
      return false;
    }
    if (list == next_list) ++next_list;
    recipe.header_paths = lists[list];
  }
  return next_list == lists.size();
}

}  // namespace

Recipe recipe_of(const CompileRequest& request, const KeyInputs& inputs,
                 const std::filesystem::path& base_dir) {
  // The paths of the request in key-input form, relativized as the key relativizes them (the
  // source folder rides along as one more path).
  KeyInputs paths;
  paths.options = request.options;
  paths.program_name = request.program_name;
  paths.headers.push_back({"", request.source_dir.string(), true, {}});
  for (const HeaderDigest& header : inputs.headers) {
    if (header.resolved) paths.headers.push_back(header);
  }
  if (!base_dir.empty()) relativize_paths(paths, base_dir);
  Recipe recipe;
  recipe.program_name = paths.program_name;
  recipe.source = request.source;
  recipe.arch = request.arch;
  recipe.source_dir = paths.headers.front().path;
  recipe.options = paths.options;
  recipe.name_expressions = request.name_expressions;
  std::vector<std::string> header_paths;
  header_paths.reserve(paths.headers.size() - 1);
  for (std::size_t i = 1; i < paths.headers.size(); ++i) {
    header_paths.push_back(std::move(paths.headers[i].path));
  }
  recipe.header_paths = std::move(header_paths);
  return recipe;
}

CompileRequest request_of(const Recipe& recipe, const std::filesystem::path& base_dir) {
  CompileRequest request;
  request.source = recipe.source;
  request.program_name = expand_base_dir(recipe.program_name, 0, base_dir);
  request.name_expressions = recipe.name_expressions;
  for (const std::string& option : recipe.options) {
    std::string expanded = expand_base_dir(option, 0, base_dir);
    if (expanded == option && option.starts_with("-I")) {
      expanded = expand_base_dir(option, 2, base_dir);
    }
    if (const auto equals = option.find('='); expanded == option && equals != std::string::npos) {
      expanded = expand_base_dir(option, equals + 1, base_dir);
    }
    request.options.push_back(std::move(expanded));
  }
  request.arch = recipe.arch;
  request.source_dir = expand_base_dir(recipe.source_dir, 0, base_dir);
  return request;
}

std::vector<std::string> header_paths_of(const Recipe& recipe,
                                         const std::filesystem::path& base_dir) {
  std::vector<std::string> paths;
  paths.reserve(recipe.header_paths.list().size());
  for (const std::string& path : recipe.header_paths.list()) {
    paths.push_back(expand_base_dir(path, 0, base_dir));
  }
  return paths;
}

std::array<std::uint8_t, 16> recipe_id(const Recipe& recipe) {
  return hash128(encode_recipe(recipe));
}

std::string encode_recipe(const Recipe& recipe) {
  std::string out;
  put_recipe(out, recipe);
  return out;
}

Result<Recipe> decode_recipe(std::string_view bytes) {
  Reader reader(bytes);
  Recipe recipe;
  if (!reader.recipe(recipe) || reader.left() != 0) {
    return fail(Errc::corrupt, "not a cubby recipe (truncated or trailing bytes)");
  }
  return recipe;
}

std::string encode_manifest(const Manifest& manifest) {
  // Each distinct header list once (by identity first: the lists of a decoded manifest are
  // shared; then by contents: a run's new recipes each have their own), each path once.
  std::vector<const std::vector<std::string>*> lists;
  std::unordered_map<const void*, std::uint32_t> list_of_identity;
  std::map<std::vector<std::string>, std::uint32_t> list_of_contents;
  std::vector<std::uint32_t> list_index;
  list_index.reserve(manifest.recipes.size());
  for (const Recipe& recipe : manifest.recipes) {
    auto [known, added] =
        list_of_identity.try_emplace(recipe.header_paths.identity(), std::uint32_t{0});
    if (added) {
      const auto& list = recipe.header_paths.list();
      auto [by_contents, new_list] =
          list_of_contents.try_emplace(list, static_cast<std::uint32_t>(lists.size()));
      if (new_list) lists.push_back(&list);
      known->second = by_contents->second;
    }
    list_index.push_back(known->second);
  }
  std::vector<std::string_view> paths;
  std::unordered_map<std::string_view, std::uint32_t> path_index;
  std::string sets;
  put_le(sets, static_cast<std::uint32_t>(lists.size()));
  for (const auto* list : lists) {
    put_le(sets, static_cast<std::uint32_t>(list->size()));
    for (const std::string& path : *list) {
      auto [at, added] = path_index.try_emplace(path, static_cast<std::uint32_t>(paths.size()));
      if (added) paths.push_back(path);
      put_le(sets, at->second);
    }
  }
  std::string out(kMagic);
  put_le(out, kManifestFormatVersion);
  put_str(out, manifest.suite);
  put_le(out, static_cast<std::uint32_t>(paths.size()));
  for (std::string_view path : paths) put_str(out, path);
  out += sets;
  put_le(out, static_cast<std::uint32_t>(manifest.recipes.size()));
  for (std::size_t i = 0; i < manifest.recipes.size(); ++i) {
    put_request_fields(out, manifest.recipes[i]);
    put_le(out, list_index[i]);
  }
  put_checksum(out);
  return out;
}

Result<Manifest> decode_manifest(std::string_view bytes) {
  auto body = checked_body(bytes, kMagic, kManifestFormatVersion, "manifest");
  if (!body) return body.error();
  const std::uint32_t version = load_le<std::uint32_t>(bytes, kMagic.size());
  Reader reader(*body);
  Manifest manifest;
  if (!reader.str(manifest.suite)) return fail(Errc::corrupt, "manifest header is damaged");
  const bool read = version < 2 ? read_recipes_v1(reader, manifest.recipes)
                                : read_recipes_v2(reader, manifest.recipes);
  if (!read) {
    return fail(Errc::corrupt, "manifest is damaged (a count, length or index out of range)");
  }
  if (reader.left() != 0) return fail(Errc::corrupt, "manifest has trailing bytes");
  return manifest;
}

std::vector<Recipe> merge_recipes(const std::vector<Recipe>& recent,
                                  const std::vector<Recipe>& older) {
  return first_of_each(recent, older, [](const Recipe& recipe) { return recipe_id(recipe); });
}

Key manifest_key(std::string_view suite) { return suite_value_key("cubby-manifest", suite); }

std::string encode_suite_keys(const SuiteKeys& keys) {
  std::string out = header(kKeysMagic, kSuiteKeysFormatVersion, keys.suite, keys.keys.size());
  for (const RecipeKey& pair : keys.keys) {
    out.append(reinterpret_cast<const char*>(pair.recipe.data()), pair.recipe.size());
    out.append(reinterpret_cast<const char*>(pair.key.bytes.data()), pair.key.bytes.size());
  }
  put_checksum(out);
  return out;
}

Result<SuiteKeys> decode_suite_keys(std::string_view bytes) {
  auto body = checked_body(bytes, kKeysMagic, kSuiteKeysFormatVersion, "suite key list");
  if (!body) return body.error();
  Reader reader(*body);
  SuiteKeys keys;
  std::uint32_t count = 0;
  constexpr std::size_t kPairBytes = 32;
  if (!read_header(reader, keys.suite, count) || reader.left() != count * kPairBytes) {
    return fail(Errc::corrupt, "suite key list is damaged (header, or a count its bytes lack)");
  }
  const std::string_view pairs = body->substr(body->size() - reader.left());
  keys.keys.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const char* at = pairs.data() + i * kPairBytes;
    std::copy_n(reinterpret_cast<const std::uint8_t*>(at), 16, keys.keys[i].recipe.begin());
    std::copy_n(reinterpret_cast<const std::uint8_t*>(at + 16), 16, keys.keys[i].key.bytes.begin());
  }
  return keys;
}

std::vector<RecipeKey> merge_suite_keys(const std::vector<RecipeKey>& recent,
                                        const std::vector<RecipeKey>& older) {
  return first_of_each(recent, older, [](const RecipeKey& pair) { return pair.recipe; });
}

Key suite_keys_key(std::string_view suite) { return suite_value_key("cubby-suite-keys", suite); }

}  // namespace cubby
