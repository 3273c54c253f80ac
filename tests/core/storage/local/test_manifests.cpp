// Tests of storage/local/manifests: suite manifest files in a store.
#include <gtest/gtest.h>

#include "storage/local/manifests.hpp"
#include "test_support.hpp"
#include "util/bytes.hpp"

namespace cubby {
namespace {

using testing::TempDir;

Recipe recipe(const std::string& tag) {
  Recipe r;
  r.program_name = tag + ".cu";
  r.source = "__global__ void " + tag + "() {}\n";
  r.name_expressions = {tag};
  return r;
}

TEST(ManifestStem, PlainNamesStayAndOthersGetAHashThatKeepsThemApart) {
  EXPECT_EQ(manifest_stem("test_mdspan-1.2+x"), "test_mdspan-1.2+x");
  const std::string slashed = manifest_stem("a/b");
  const std::string spaced = manifest_stem("a b");
  EXPECT_EQ(slashed.find('/'), std::string::npos);
  EXPECT_NE(slashed, spaced);  // both sanitize to "a_b": the hash tells them apart
  EXPECT_TRUE(slashed.starts_with("a_b-"));
  EXPECT_FALSE(manifest_stem("..").starts_with("."));
  EXPECT_FALSE(manifest_stem("").empty());
  EXPECT_LE(manifest_stem(std::string(500, 'x')).size(), 64U);
}

TEST(Manifests, RecordWritesMergesAndSkipsAnUnchangedManifest) {
  TempDir store("manifests");
  auto first = record_manifest(store.path(), "s", {recipe("a"), recipe("b")});
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(first->has_value());
  auto same = record_manifest(store.path(), "s", {recipe("a"), recipe("b")});
  ASSERT_TRUE(same);
  EXPECT_FALSE(same->has_value());  // nothing new: not written again
  // Another process of the suite that asked for c first and b: c, b, then a from before.
  ASSERT_TRUE(record_manifest(store.path(), "s", {recipe("c"), recipe("b")}));
  auto loaded = load_manifest(store.path(), "s");
  ASSERT_TRUE(loaded && *loaded);
  ASSERT_EQ((*loaded)->recipes.size(), 3U);
  EXPECT_EQ((*loaded)->recipes[0], recipe("c"));
  EXPECT_EQ((*loaded)->recipes[1], recipe("b"));
  EXPECT_EQ((*loaded)->recipes[2], recipe("a"));
}

TEST(Manifests, AMissingManifestIsNoneAndADamagedOneAnErrorNamingTheFile) {
  TempDir store("manifests");
  auto none = load_manifest(store.path(), "s");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  testing::write_text(manifest_path(store.path(), "s"), "CUBBYMAN garbage");
  auto damaged = load_manifest(store.path(), "s");
  ASSERT_FALSE(damaged);
  EXPECT_EQ(damaged.error().code, Errc::corrupt);
  EXPECT_NE(damaged.error().message.find(manifest_path(store.path(), "s").string()),
            std::string::npos);
  // Recording replaces a damaged manifest.
  ASSERT_TRUE(record_manifest(store.path(), "s", {recipe("a")}));
  EXPECT_TRUE(load_manifest(store.path(), "s"));
}

TEST(Manifests, AFileOfAnotherSuiteAtThePathIsRefused) {
  TempDir store("manifests");
  ASSERT_TRUE(save_manifest(store.path(), {"other", {recipe("a")}}));
  std::filesystem::rename(manifest_path(store.path(), "other"), manifest_path(store.path(), "s"));
  auto loaded = load_manifest(store.path(), "s");
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("belongs to suite 'other'"), std::string::npos);
}

TEST(Manifests, ListSuitesNamesReadableManifestsOnly) {
  TempDir store("manifests");
  ASSERT_TRUE(save_manifest(store.path(), {"b/suite", {recipe("a")}}));
  ASSERT_TRUE(save_manifest(store.path(), {"a", {recipe("a")}}));
  testing::write_text(manifests_dir(store.path()) / "broken.manifest", "not a manifest");
  EXPECT_EQ(list_suites(store.path()), (std::vector<std::string>{"a", "b/suite"}));
}

TEST(Manifests, AStoreThatCannotBeWrittenIsAnErrorNotACrash) {
  TempDir store("manifests");
  testing::write_text(manifests_dir(store.path()), "a file where the folder should be");
  auto written = record_manifest(store.path(), "s", {recipe("a")});
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().code, Errc::io);
}

RecipeKey pair(std::uint8_t recipe, std::uint8_t key) {
  RecipeKey out;
  out.recipe.fill(recipe);
  out.key.bytes.fill(key);
  return out;
}

TEST(SuiteKeysFile, RecordWritesMergesAndSkipsUnchangedKeys) {
  TempDir store("manifests");
  auto first = record_suite_keys(store.path(), "s", {pair(1, 10), pair(2, 20)});
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_TRUE(first->has_value());
  auto decoded = decode_suite_keys(**first);
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->keys, (std::vector<RecipeKey>{pair(1, 10), pair(2, 20)}));
  EXPECT_EQ(testing::read_text(suite_keys_path(store.path(), "s")), **first);
  auto same = record_suite_keys(store.path(), "s", {pair(2, 20)});
  ASSERT_TRUE(same);
  EXPECT_FALSE(same->has_value());  // nothing new for either recipe: not written again
  // A header edit changed recipe 2's key: written, the new key first, recipe 1 kept.
  auto edited = record_suite_keys(store.path(), "s", {pair(2, 21)});
  ASSERT_TRUE(edited && edited->has_value());
  EXPECT_EQ(decode_suite_keys(**edited)->keys, (std::vector<RecipeKey>{pair(2, 21), pair(1, 10)}));
}

TEST(SuiteKeysFile, ADamagedOrAnotherSuitesFileIsReplaced) {
  TempDir store("manifests");
  testing::write_text(suite_keys_path(store.path(), "s"), "CUBBYKEY garbage");
  auto replaced = record_suite_keys(store.path(), "s", {pair(1, 10)});
  ASSERT_TRUE(replaced && replaced->has_value());
  EXPECT_EQ(decode_suite_keys(**replaced)->keys, (std::vector<RecipeKey>{pair(1, 10)}));
  testing::write_text(suite_keys_path(store.path(), "s"),
                      encode_suite_keys({"other", {pair(2, 20)}}));
  auto mine = record_suite_keys(store.path(), "s", {pair(1, 10)});
  ASSERT_TRUE(mine && mine->has_value());
  EXPECT_EQ(decode_suite_keys(**mine)->suite, "s");
  EXPECT_EQ(decode_suite_keys(**mine)->keys, (std::vector<RecipeKey>{pair(1, 10)}));
  EXPECT_NE(suite_keys_path(store.path(), "s"), manifest_path(store.path(), "s"));
}

}  // namespace
}  // namespace cubby
