// The store as a whole (core/src/store/store.cpp): usage and estimate, listing, usage and clear
// by namespace, removal by age, counters, whether a key is stored or being compiled.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "format/blob.hpp"
#include "storage/local/lock.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Stores blob `name` of `ns` (a valid entry of that namespace); returns its key.
Key put_blob(Store& store, std::string_view ns, std::string_view name, std::size_t size = 100) {
  const Key key = blob_key(ns, name);
  EXPECT_TRUE(
      store.put(key, encode_entry(key, blob_entry(ns, name, std::string(size, 'b'), 0))).ok());
  return key;
}

// Stores a file that is no entry (it decodes to nothing, so it belongs to no namespace).
Key put_garbage(Store& store) {
  Key key;
  key.bytes.fill(0x42);
  EXPECT_TRUE(store.put(key, "not an entry").ok());
  return key;
}

TEST(Store, UsageMeasuresTheEntryFilesAndEstimateReadsThePersistedCounters) {
  TempDir dir("store");
  Store store(dir.path());
  EXPECT_EQ(store.usage()->entries, 0u);  // a fresh folder: nothing, no failure
  const Key a = put_blob(store, "cupy", "a");
  put_blob(store, "cupy", "b");
  const auto usage = store.usage();
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->entries, 2u);
  EXPECT_EQ(usage->bytes, fs::file_size(store.path_of(a)) * 2);
  // put() leaves the estimate to its caller: it still says nothing is stored.
  EXPECT_EQ(store.estimate()->entries, 0u);
  ASSERT_TRUE(StoreStats(dir.path()).add({{"store_entries", 7}, {"store_bytes", -5}}).ok());
  EXPECT_EQ(store.estimate()->entries, 7u);
  EXPECT_EQ(store.estimate()->bytes, 0u);  // never negative
}

TEST(Store, ClearNamespaceRemovesOnlyThatNamespaceAndKeepsWhatDoesNotDecode) {
  TempDir dir("store");
  Store store(dir.path());
  put_blob(store, "cupy", "a");
  const Key other = put_blob(store, "other", "b");
  const Key garbage = put_garbage(store);
  const auto cleared = store.clear_namespace("cupy");
  ASSERT_TRUE(cleared.ok()) << cleared.error().message;
  EXPECT_EQ(cleared->removed, 1u);
  EXPECT_EQ(cleared->unreadable, 1u);
  EXPECT_EQ(cleared->namespaces, (std::set<std::string>{"cupy", "other"}));
  EXPECT_TRUE(store.contains(other));
  EXPECT_TRUE(store.contains(garbage));
  EXPECT_EQ(store.usage()->entries, 2u);
  EXPECT_EQ(store.clear().value(), 2u);
  EXPECT_EQ(store.usage()->entries, 0u);
}

TEST(Store, NamespaceUsageCountsTheEntriesAndBytesOfThatNamespaceOnly) {
  TempDir dir("store");
  Store store(dir.path());
  EXPECT_EQ(store.namespace_usage("cupy")->entries, 0u);  // a fresh folder: nothing, no failure
  const Key a = put_blob(store, "cupy", "a", 100);
  const Key b = put_blob(store, "cupy", "b", 300);
  put_blob(store, "other", "c");
  put_garbage(store);
  const auto usage = store.namespace_usage("cupy");
  ASSERT_TRUE(usage.ok()) << usage.error().message;
  EXPECT_EQ(usage->entries, 2u);
  EXPECT_EQ(usage->bytes, fs::file_size(store.path_of(a)) + fs::file_size(store.path_of(b)));
  EXPECT_EQ(store.namespace_usage("other")->entries, 1u);
  EXPECT_EQ(store.namespace_usage(kProgramsNamespace)->entries, 0u);  // garbage is in none
  EXPECT_EQ(store.namespace_usage("absent")->bytes, 0u);
  EXPECT_EQ(store.clear_namespace("cupy")->removed, 2u);
  EXPECT_EQ(store.namespace_usage("cupy")->entries, 0u);
}

TEST(Store, RemoveOlderThanRemovesOnlyEntriesUnusedSinceTheCutoffAndCountsEvictions) {
  TempDir dir("store");
  Store store(dir.path());
  const Key old = put_blob(store, "cupy", "old");
  const Key recent = put_blob(store, "cupy", "recent");
  fs::last_write_time(store.path_of(old),
                      fs::file_time_type::clock::now() - std::chrono::hours(48));
  const auto removed =
      store.remove_older_than(fs::file_time_type::clock::now() - std::chrono::hours(24));
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->entries, 1u);
  EXPECT_FALSE(store.contains(old));
  EXPECT_TRUE(store.contains(recent));
  EXPECT_EQ(store.counters()->at("evictions"), 1);
}

TEST(Store, KeysWithPrefixListsTheMatchingKeysSorted) {
  TempDir dir("store");
  Store store(dir.path());
  Key a;
  a.bytes.fill(0xab);
  Key b = a;
  b.bytes[15] = 0x01;
  Key c;
  c.bytes.fill(0xac);
  for (const Key& key : {a, b, c}) ASSERT_TRUE(store.put(key, "x").ok());
  const auto keys = store.keys_with_prefix("abab");
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(*keys, (std::vector<Key>{b, a}));
  EXPECT_TRUE(store.keys_with_prefix("ad")->empty());
}

TEST(Store, ZeroCountersKeepsTheSizeEstimateAndRecordsWhen) {
  TempDir dir("store");
  Store store(dir.path());
  EXPECT_FALSE(store.zeroed_ms().has_value());
  ASSERT_TRUE(StoreStats(dir.path()).add({{"store_entries", 3}, {"evictions", 4}}).ok());
  ASSERT_TRUE(store.zero_counters().ok());
  const auto counters = store.counters();
  ASSERT_TRUE(counters.ok());
  EXPECT_EQ(counters->count("evictions"), 0u);
  EXPECT_EQ(counters->at("store_entries"), 3);
  ASSERT_TRUE(store.zeroed_ms().has_value());
  EXPECT_GT(*store.zeroed_ms(), 0);
}

TEST(Store, CompileInProgressWhileTheKeysLockIsHeld) {
  TempDir dir("store");
  Store store(dir.path());
  const Key key = blob_key("cupy", "k");
  EXPECT_FALSE(store.compile_in_progress(key));
  auto held = FileLock::try_acquire(DiskTier(dir.path()).lock_path_of(key));
  ASSERT_TRUE(held.ok() && held->has_value());
  EXPECT_TRUE(store.compile_in_progress(key));
  held->reset();
  EXPECT_FALSE(store.compile_in_progress(key));
}

}  // namespace
}  // namespace cubby
