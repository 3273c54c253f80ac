// Export and import members (core/src/store/exchange.cpp): what leaves a store, verified, and what
// each member of an archive does to a store.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "format/blob.hpp"
#include "storage/local/manifests.hpp"
#include "store/exchange.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using testing::TempDir;

Key put_blob(Store& store, std::string_view name) {
  const Key key = blob_key("cupy", name);
  EXPECT_TRUE(store.put(key, encode_entry(key, blob_entry("cupy", name, "payload", 0))).ok());
  return key;
}

Manifest manifest_of(const std::string& suite, const std::string& program) {
  Recipe recipe;
  recipe.program_name = program;
  recipe.source = "__global__ void k() {}";
  return Manifest{suite, {recipe}};
}

std::vector<ExportMember> export_all(const Store& store, std::vector<std::string>* skipped) {
  std::vector<ExportMember> members;
  const auto listed = export_store(
      store,
      [&](const ExportMember& member) {
        members.push_back(member);
        return true;
      },
      [&](const std::string& message) { skipped->push_back(message); });
  EXPECT_TRUE(listed.ok());
  return members;
}

TEST(StoreExchange, ExportedMembersImportIntoAnotherStore) {
  TempDir from_dir("from");
  TempDir to_dir("to");
  Store from(from_dir.path());
  const Key a = put_blob(from, "a");
  Key bad;
  bad.bytes.fill(0x33);
  ASSERT_TRUE(from.put(bad, "not an entry").ok());
  ASSERT_TRUE(save_manifest(from_dir.path(), manifest_of("suite", "one.cu")).ok());

  std::vector<std::string> skipped;
  const std::vector<ExportMember> members = export_all(from, &skipped);
  ASSERT_EQ(members.size(), 2u);  // the good entry, then the manifest
  EXPECT_EQ(members[0].kind, ExportMember::Kind::entry);
  EXPECT_EQ(members[0].name, "entries/" + a.hex().substr(0, 2) + "/" + a.hex() + ".entry");
  EXPECT_GT(members[0].mtime, 0);
  EXPECT_EQ(members[1].kind, ExportMember::Kind::manifest);
  EXPECT_EQ(members[1].name, "manifests/suite.manifest");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find(bad.hex()), std::string::npos) << skipped[0];

  Store to(to_dir.path());
  ImportTally tally;
  for (const ExportMember& member : members)
    import_member(to, member.name, true, member.bytes, tally);
  finish_import(to, tally);
  EXPECT_EQ(tally.imported, 1u);
  EXPECT_EQ(tally.manifests, 1u);
  EXPECT_EQ(tally.bytes, members[0].bytes.size());
  EXPECT_TRUE(to.contains(a));
  EXPECT_EQ(to.estimate()->entries, 1u);
  const auto manifest = load_manifest(to_dir.path(), "suite");
  ASSERT_TRUE(manifest.ok() && manifest->has_value());
  EXPECT_EQ((*manifest)->recipes.at(0).program_name, "one.cu");
}

TEST(StoreExchange, ImportCountsPresentForeignAndRejectsAnEntryOfAnotherKey) {
  TempDir dir("to");
  Store store(dir.path());
  const Key a = put_blob(store, "a");
  const std::string a_bytes = *store.peek(a).value();
  ImportTally tally;
  import_member(store, "entries/xx/" + a.hex() + ".entry", true, a_bytes, tally);
  import_member(store, "README", true, "hello", tally);
  import_member(store, "entries/link.entry", false, "", tally);
  const Key other = blob_key("cupy", "other");
  import_member(store, other.hex() + ".entry", true, a_bytes, tally);  // a's bytes under other
  import_member(store, "manifests/x.manifest", true, "garbage", tally);
  EXPECT_EQ(tally.present, 1u);
  EXPECT_EQ(tally.foreign, 2u);
  EXPECT_EQ(tally.rejected, 2u);
  EXPECT_EQ(tally.imported, 0u);
  ASSERT_EQ(tally.problems.size(), 2u);
  EXPECT_EQ(tally.problems[0].key, other.hex());
  EXPECT_EQ(tally.problems[1].member, "manifests/x.manifest");
  EXPECT_FALSE(store.contains(other));
}

}  // namespace
}  // namespace cubby
