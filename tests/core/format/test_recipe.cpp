// Tests of format/recipe: recipes and suite manifests, their encoding and merge.
//
// Golden files: tests/golden/manifest_v1.bin is golden_manifest() as format 1 wrote it (cubby at
// 76602f8), read for ever; tests/golden/manifest_v2.bin as format 2 writes it: run the test with
// CUBBY_UPDATE_GOLDEN=1 to rewrite it after a deliberate change (and bump the format version).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "format/blob.hpp"
#include "format/recipe.hpp"
#include "test_support.hpp"
#include "util/bytes.hpp"
#include "util/hash.hpp"

namespace cubby {
namespace {

Recipe sample(const std::string& tag) {
  Recipe recipe;
  recipe.program_name = tag + ".cu";
  recipe.source = "__global__ void k_" + tag + "() {}\n";
  recipe.arch = tag == "a" ? "" : "sm_90";
  recipe.source_dir = "/src/" + tag;
  recipe.options = {"-std=c++17", "-DTAG=" + tag};
  recipe.name_expressions = {"k_" + tag};
  recipe.header_paths = {"/src/" + tag + "/ops.cuh"};
  return recipe;
}

Manifest sample_manifest() { return {"suite one", {sample("a"), sample("b"), sample("c")}}; }

TEST(Recipe, EncodesAndDecodesEveryField) {
  const Recipe recipe = sample("b");
  auto decoded = decode_recipe(encode_recipe(recipe));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(*decoded, recipe);
}

TEST(Recipe, TrailingOrMissingBytesAreCorrupt) {
  const std::string bytes = encode_recipe(sample("a"));
  EXPECT_EQ(decode_recipe(bytes + "x").error().code, Errc::corrupt);
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    EXPECT_FALSE(decode_recipe(bytes.substr(0, size))) << "size " << size;
  }
}

TEST(Recipe, RequestRoundTripKeepsTheRequestAndTakesResolvedHeaderPaths) {
  CompileRequest request;
  request.source = "#include \"ops.cuh\"\n";
  request.program_name = "p.cu";
  request.name_expressions = {"k<int>"};
  request.options = {"-I/inc"};
  request.source_dir = "/src";
  KeyInputs inputs;
  inputs.headers = {{"ops.cuh", "/inc/ops.cuh", true, {}}, {"gone.cuh", "", false, {}}};
  const Recipe recipe = recipe_of(request, inputs);
  EXPECT_EQ(recipe.header_paths.list(), std::vector<std::string>{"/inc/ops.cuh"});
  EXPECT_EQ(recipe.arch, "");  // as requested: the warming process picks its default
  const CompileRequest again = request_of(recipe);
  EXPECT_EQ(again.source, request.source);
  EXPECT_EQ(again.program_name, request.program_name);
  EXPECT_EQ(again.name_expressions, request.name_expressions);
  EXPECT_EQ(again.options, request.options);
  EXPECT_EQ(again.source_dir, request.source_dir);
  EXPECT_EQ(again.arch, request.arch);
}

TEST(Recipe, PathsUnderTheBaseFolderAreRecordedRelativeAndReadInAnotherCheckout) {
  CompileRequest request;
  request.source = "#include \"ops.cuh\"\n";
  request.program_name = "/ci/a/src/p.cu";
  request.options = {"-I/ci/a/include", "--include-path=/ci/a/more", "-DX=1", "-I/elsewhere"};
  request.source_dir = "/ci/a/src";
  KeyInputs inputs;
  inputs.headers = {{"ops.cuh", "/ci/a/include/ops.cuh", true, {}}};
  const Recipe recipe = recipe_of(request, inputs, "/ci/a");
  EXPECT_EQ(recipe.program_name, "${CUBBY_BASE_DIR}/src/p.cu");
  EXPECT_EQ(recipe.source_dir, "${CUBBY_BASE_DIR}/src");
  EXPECT_EQ(recipe.options, (std::vector<std::string>{"-I${CUBBY_BASE_DIR}/include",
                                                      "--include-path=${CUBBY_BASE_DIR}/more",
                                                      "-DX=1", "-I/elsewhere"}));
  EXPECT_EQ(recipe.header_paths.list(),
            std::vector<std::string>{"${CUBBY_BASE_DIR}/include/ops.cuh"});
  const CompileRequest there = request_of(recipe, "/ci/b/");
  EXPECT_EQ(there.program_name, "/ci/b/src/p.cu");
  EXPECT_EQ(there.source_dir, "/ci/b/src");
  EXPECT_EQ(there.options, (std::vector<std::string>{"-I/ci/b/include", "--include-path=/ci/b/more",
                                                     "-DX=1", "-I/elsewhere"}));
  EXPECT_EQ(header_paths_of(recipe, "/ci/b"), std::vector<std::string>{"/ci/b/include/ops.cuh"});
  EXPECT_EQ(request_of(recipe).source_dir, "${CUBBY_BASE_DIR}/src");  // no base: left as is
}

TEST(Manifest, EncodesAndDecodesInOrder) {
  auto decoded = decode_manifest(encode_manifest(sample_manifest()));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(decoded->suite, "suite one");
  EXPECT_EQ(decoded->recipes, sample_manifest().recipes);
}

TEST(Manifest, EveryTruncationAndEveryFlippedByteIsCorruptNeverACrash) {
  const std::string bytes = encode_manifest(sample_manifest());
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    auto decoded = decode_manifest(bytes.substr(0, size));
    ASSERT_FALSE(decoded) << "size " << size;
    EXPECT_EQ(decoded.error().code, Errc::corrupt);
  }
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    std::string damaged = bytes;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x10);
    EXPECT_FALSE(decode_manifest(damaged)) << "byte " << at;
  }
}

TEST(Manifest, ANewerFormatIsRefusedWithAMessageThatSaysSo) {
  std::string bytes = encode_manifest(sample_manifest());
  store_le(bytes.data() + 8, kManifestFormatVersion + 1);
  auto decoded = decode_manifest(bytes);
  ASSERT_FALSE(decoded);
  EXPECT_NE(decoded.error().message.find("newer cubby"), std::string::npos)
      << decoded.error().message;
}

// `body` (a manifest without its checksum) with the checksum appended.
std::string checksummed(std::string body) {
  const auto checksum = hash128(body);
  body.append(reinterpret_cast<const char*>(checksum.data()), checksum.size());
  return body;
}

// A format 1 manifest of `manifest`: every recipe with its own header list.
std::string format_one(const Manifest& manifest) {
  std::string body = "CUBBYMAN";
  put_le(body, std::uint32_t{1});
  put_le(body, static_cast<std::uint32_t>(manifest.suite.size()));
  body += manifest.suite;
  put_le(body, static_cast<std::uint32_t>(manifest.recipes.size()));
  for (const Recipe& recipe : manifest.recipes) body += encode_recipe(recipe);
  return checksummed(body);
}

// `count` recipes of one suite that read the same `headers` headers (each its own list, as a
// run records them).
Manifest many_reading_the_same_headers(std::size_t count, std::size_t headers) {
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < headers; ++i) {
    paths.push_back("/site-packages/cupy/_core/include/cupy/_cccl/thrust/header_" +
                    std::to_string(i) + ".h");
  }
  Manifest manifest{"cupy", {}};
  for (std::size_t i = 0; i < count; ++i) {
    Recipe recipe = sample(std::to_string(i));
    recipe.header_paths = paths;
    manifest.recipes.push_back(std::move(recipe));
  }
  manifest.recipes.back().header_paths = std::vector<std::string>{paths.front()};
  return manifest;
}

TEST(Manifest, HoldsEachHeaderListAndPathOnceAndSharesTheListAmongTheRecipesDecoded) {
  const Manifest manifest = many_reading_the_same_headers(200, 500);
  const std::string bytes = encode_manifest(manifest);
  const std::size_t one_list = encode_recipe(manifest.recipes.front()).size();
  EXPECT_LT(bytes.size(), 2 * one_list + 200 * 200) << "format 1: " << format_one(manifest).size();
  auto decoded = decode_manifest(bytes);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(decoded->recipes, manifest.recipes);
  EXPECT_EQ(decoded->recipes[0].header_paths.identity(),
            decoded->recipes[198].header_paths.identity());
  EXPECT_NE(decoded->recipes[0].header_paths.identity(),
            decoded->recipes[199].header_paths.identity());
  // Written again from the decoded form: the same bytes (the lists found by identity).
  EXPECT_EQ(encode_manifest(*decoded), bytes);
  // A recipe's identity does not depend on the list being shared.
  EXPECT_EQ(recipe_id(decoded->recipes[5]), recipe_id(manifest.recipes[5]));
}

TEST(Manifest, AFormatOneManifestIsStillRead) {
  const Manifest manifest = many_reading_the_same_headers(3, 4);
  auto decoded = decode_manifest(format_one(manifest));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(decoded->suite, "cupy");
  EXPECT_EQ(decoded->recipes, manifest.recipes);
  std::string damaged = format_one(manifest);
  damaged.resize(damaged.size() - 16 - 1);
  EXPECT_EQ(decode_manifest(checksummed(damaged)).error().code, Errc::corrupt);
}

TEST(Manifest, AnIndexOutOfItsTableIsCorruptEvenUnderAGoodChecksum) {
  // One recipe, one list of one path: the list's path index and the recipe's list index are the
  // u32s at known places; each pointed one past its table, the checksum made again.
  Manifest manifest{"s", {sample("a")}};
  const std::string bytes = encode_manifest(manifest);
  std::string body = bytes.substr(0, bytes.size() - 16);
  const std::size_t tables = 8 + 4 + 4 + 1;  // magic, version, suite "s"
  const std::size_t path_index = tables + 4 + 4 +
                                 manifest.recipes[0].header_paths.list()[0].size() + 4 +
                                 4;  // paths: count, one str; lists: count, list size
  ASSERT_EQ(load_le<std::uint32_t>(body, path_index), 0U);
  std::string bad_path = body;
  store_le(bad_path.data() + path_index, std::uint32_t{1});
  EXPECT_EQ(decode_manifest(checksummed(bad_path)).error().code, Errc::corrupt);
  std::string bad_list = body;
  ASSERT_EQ(load_le<std::uint32_t>(body, body.size() - 4), 0U);  // the last field: its list
  store_le(bad_list.data() + bad_list.size() - 4, std::uint32_t{1});
  auto refused = decode_manifest(checksummed(bad_list));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("index"), std::string::npos) << refused.error().message;
  EXPECT_TRUE(decode_manifest(checksummed(body)));  // the checksum helper is right
}

// The body (no checksum) of a format 2 manifest of suite "s" from its tables: `paths`, `lists`
// (indexes into paths) and, per recipe sample(tag), its list index.
std::string format_two(const std::vector<std::string>& paths,
                       const std::vector<std::vector<std::uint32_t>>& lists,
                       const std::vector<std::pair<std::string, std::uint32_t>>& recipes) {
  std::string body = "CUBBYMAN";
  put_le(body, std::uint32_t{2});
  const auto str = [&body](const std::string& text) {
    put_le(body, static_cast<std::uint32_t>(text.size()));
    body += text;
  };
  str("s");
  put_le(body, static_cast<std::uint32_t>(paths.size()));
  for (const std::string& path : paths) str(path);
  put_le(body, static_cast<std::uint32_t>(lists.size()));
  for (const auto& list : lists) {
    put_le(body, static_cast<std::uint32_t>(list.size()));
    for (std::uint32_t index : list) put_le(body, index);
  }
  put_le(body, static_cast<std::uint32_t>(recipes.size()));
  for (const auto& [tag, list] : recipes) {
    Recipe fields = sample(tag);
    fields.header_paths = {};
    const std::string bare = encode_recipe(fields);
    body += bare.substr(0, bare.size() - 4);  // the request fields: all but the empty list
    put_le(body, list);
  }
  return checksummed(body);
}

TEST(Manifest, FormatTwoIsReadOnlyAsItIsWrittenSoDecodingIsExact) {
  // The canonical form decodes, and encodes to the same bytes.
  const std::string good = format_two({"/a.h", "/b.h"}, {{0, 1}, {1}}, {{"x", 0}, {"y", 1}});
  auto decoded = decode_manifest(good);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(encode_manifest(*decoded), good);
  // Anything else is corrupt: a path never used, a path first used out of order, a path twice,
  // a list twice, a list never used, a list first used out of order.
  for (const std::string& other :
       {format_two({"/a.h", "/b.h", "/c.h"}, {{0, 1}, {1}}, {{"x", 0}, {"y", 1}}),
        format_two({"/a.h", "/b.h"}, {{1, 0}, {1}}, {{"x", 0}, {"y", 1}}),
        format_two({"/a.h", "/a.h"}, {{0, 1}, {1}}, {{"x", 0}, {"y", 1}}),
        format_two({"/a.h", "/b.h"}, {{0, 1}, {0, 1}}, {{"x", 0}, {"y", 1}}),
        format_two({"/a.h", "/b.h"}, {{0, 1}, {1}}, {{"x", 0}, {"y", 0}}),
        format_two({"/a.h", "/b.h"}, {{0, 1}, {1}}, {{"x", 1}, {"y", 0}})}) {
    auto refused = decode_manifest(other);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, Errc::corrupt);
  }
}

// Three recipes, the first and the last reading one list of two headers, the second another.
Manifest golden_manifest() {
  const std::vector<std::string> common = {"/inc/ops.cuh", "/inc/detail/ops_impl.cuh"};
  const auto recipe = [](const std::string& tag, std::vector<std::string> headers) {
    Recipe r;
    r.program_name = tag + ".cu";
    r.source = "#include \"ops.cuh\"\n__global__ void k_" + tag + "() {}\n";
    r.arch = tag == "a" ? "" : "sm_90";
    r.source_dir = "/src";
    r.options = {"-std=c++17", "-I/inc", "-DTAG=" + tag};
    r.name_expressions = {"k_" + tag};
    r.header_paths = std::move(headers);
    return r;
  };
  return {"golden suite",
          {recipe("a", common), recipe("b", {"/inc/ops.cuh"}), recipe("c", common)}};
}

std::filesystem::path golden(const std::string& name) {
  return std::filesystem::path(CUBBY_TEST_DATA_DIR) / "golden" / name;
}

TEST(Manifest, TheGoldenFormatOneFileIsRead) {
  auto decoded = decode_manifest(testing::read_text(golden("manifest_v1.bin")));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(decoded->suite, "golden suite");
  EXPECT_EQ(decoded->recipes, golden_manifest().recipes);
}

TEST(Manifest, FormatTwoWritesTheGoldenFileAndReadsIt) {
  const std::string bytes = encode_manifest(golden_manifest());
  const char* update = std::getenv("CUBBY_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    testing::write_text(golden("manifest_v2.bin"), bytes);
    GTEST_SKIP() << "rewrote " << golden("manifest_v2.bin");
  }
  EXPECT_EQ(testing::read_text(golden("manifest_v2.bin")), bytes)
      << "the manifest encoding changed; if deliberate, bump kManifestFormatVersion and run with "
         "CUBBY_UPDATE_GOLDEN=1";
  auto decoded = decode_manifest(bytes);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(decoded->recipes, golden_manifest().recipes);
  EXPECT_EQ(decoded->recipes[0].header_paths.identity(),
            decoded->recipes[2].header_paths.identity());
}

TEST(Manifest, MergeKeepsTheRecentOrderFirstThenOlderRecipesOnce) {
  const std::vector<Recipe> recent = {sample("c"), sample("a"), sample("c")};
  const std::vector<Recipe> older = {sample("a"), sample("b"), sample("d")};
  const auto merged = merge_recipes(recent, older);
  ASSERT_EQ(merged.size(), 4U);
  EXPECT_EQ(merged[0], sample("c"));
  EXPECT_EQ(merged[1], sample("a"));
  EXPECT_EQ(merged[2], sample("b"));
  EXPECT_EQ(merged[3], sample("d"));
}

TEST(Manifest, RecipesDifferingInOneFieldAreDistinct) {
  Recipe other = sample("a");
  other.options.push_back("-G");
  EXPECT_NE(recipe_id(other), recipe_id(sample("a")));
  EXPECT_EQ(merge_recipes({sample("a")}, {other}).size(), 2U);
}

TEST(Manifest, RemoteKeysAreDistinctPerSuiteAndFromBlobKeys) {
  EXPECT_NE(manifest_key("one"), manifest_key("two"));
  EXPECT_EQ(manifest_key("one"), manifest_key("one"));
  EXPECT_NE(manifest_key("one"), blob_key("cubby-manifest", "one"));
}

// A recipe-key pair whose recipe id and key bytes are all `recipe` and `key`.
RecipeKey pair(std::uint8_t recipe, std::uint8_t key) {
  RecipeKey out;
  out.recipe.fill(recipe);
  out.key.bytes.fill(key);
  return out;
}

TEST(SuiteKeys, EncodesAndDecodesInOrder) {
  const SuiteKeys keys{"suite one", {pair(1, 10), pair(2, 20), pair(3, 30)}};
  auto decoded = decode_suite_keys(encode_suite_keys(keys));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(decoded->suite, "suite one");
  EXPECT_EQ(decoded->keys, keys.keys);
  auto empty = decode_suite_keys(encode_suite_keys({"s", {}}));
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_TRUE(empty->keys.empty());
}

TEST(SuiteKeys, EveryTruncationAndEveryFlippedByteIsCorruptNeverACrash) {
  const std::string bytes = encode_suite_keys({"suite", {pair(1, 10), pair(2, 20)}});
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    auto decoded = decode_suite_keys(bytes.substr(0, size));
    ASSERT_FALSE(decoded) << "size " << size;
    EXPECT_EQ(decoded.error().code, Errc::corrupt);
  }
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    std::string damaged = bytes;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x10);
    EXPECT_FALSE(decode_suite_keys(damaged)) << "byte " << at;
  }
  // A manifest is not a key list, nor the other way round.
  EXPECT_FALSE(decode_suite_keys(encode_manifest(sample_manifest())));
  EXPECT_FALSE(decode_manifest(bytes));
}

TEST(SuiteKeys, ANewerFormatOrACountItsBytesLackIsRefused) {
  std::string newer = encode_suite_keys({"suite", {pair(1, 10)}});
  store_le(newer.data() + 8, kSuiteKeysFormatVersion + 1);
  auto refused = decode_suite_keys(newer);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("newer cubby (suite key list format"), std::string::npos)
      << refused.error().message;
  // A count of two over one pair's bytes, with a checksum that matches: still refused.
  std::string body = encode_suite_keys({"suite", {pair(1, 10)}});
  body.resize(body.size() - 16);
  store_le(body.data() + 8 + 4 + 4 + 5, std::uint32_t{2});
  const auto checksum = hash128(body);
  body.append(reinterpret_cast<const char*>(checksum.data()), checksum.size());
  EXPECT_FALSE(decode_suite_keys(body));
}

TEST(SuiteKeys, MergeKeepsTheRecentKeyOfEachRecipeFirstThenOlderRecipesOnce) {
  // Recipe 2's key changed (a header edit): the recent one wins; recipe 3 kept from before.
  const auto merged = merge_suite_keys({pair(2, 21), pair(1, 10), pair(2, 22)},
                                       {pair(1, 10), pair(2, 20), pair(3, 30)});
  EXPECT_EQ(merged, (std::vector<RecipeKey>{pair(2, 21), pair(1, 10), pair(3, 30)}));
}

TEST(SuiteKeys, RemoteKeysAreDistinctPerSuiteAndFromManifestKeys) {
  EXPECT_NE(suite_keys_key("one"), suite_keys_key("two"));
  EXPECT_EQ(suite_keys_key("one"), suite_keys_key("one"));
  EXPECT_NE(suite_keys_key("one"), manifest_key("one"));
}

}  // namespace
}  // namespace cubby
