// Tests of the C API's blob and store functions (cubby_blob_*, cubby_namespace_*, cubby_store_*,
// cubby_clear, cubby_explain_json) and of the blob helpers they use (core/src/api/c_api_blob.cpp,
// core/src/format/blob.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cubby/cubby.h"
#include "format/blob.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using cubby::testing::ScopedEnv;
using cubby::testing::TempDir;

// A payload with every byte value, NULs included, to check "byte for byte".
std::string all_bytes() {
  std::string bytes;
  for (int round = 0; round < 3; ++round) {
    for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
  }
  return bytes;
}

std::string payload_of(const cubby_result* result) {
  size_t size = 0;
  const void* data = cubby_result_payload(result, &size);
  return std::string(static_cast<const char*>(data), size);
}

nlohmann::json stats_of(cubby_cache* cache) {
  const char* json = cubby_stats_json(cache);
  EXPECT_NE(json, nullptr) << cubby_last_error();
  return nlohmann::json::parse(json == nullptr ? "{}" : json);
}

// A clear of a read-only store (`clear(removed)` calls one): refused, saying why, nothing counted.
template <class Clear>
void expect_refused_as_read_only(Clear clear) {
  uint64_t removed = 99;
  EXPECT_EQ(clear(&removed), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cubby_last_error()).find("read-only"), std::string::npos)
      << cubby_last_error();
  EXPECT_EQ(removed, 0u);
}

class CApiBlobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cubby_open(dir_.path().c_str(), &cache_), CUBBY_OK) << cubby_last_error();
  }
  void TearDown() override { cubby_close(cache_); }

  cubby_cache* reopen() {
    cubby_cache* other = nullptr;
    EXPECT_EQ(cubby_open(dir_.path().c_str(), &other), CUBBY_OK) << cubby_last_error();
    return other;
  }

  ScopedEnv no_stats_file_{"CUBBY_STATS_FILE", std::nullopt};
  ScopedEnv enabled_{"CUBBY_DISABLE", std::nullopt};
  TempDir dir_{"c-api-blob"};
  cubby_cache* cache_ = nullptr;
};

TEST_F(CApiBlobTest, PutThenGetReturnsThePayloadByteForByte) {
  const std::string payload = all_bytes();
  ASSERT_EQ(cubby_blob_put(cache_, "cupy", "abc.cubin", payload.data(), payload.size(), 12.5),
            CUBBY_OK)
      << cubby_last_error();
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_blob_get(cache_, "cupy", "abc.cubin", &result), CUBBY_OK) << cubby_last_error();
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(payload_of(result), payload);
  EXPECT_EQ(cubby_result_hit(result), 1);
  EXPECT_STREQ(cubby_result_tier(result), "memory");
  EXPECT_STREQ(cubby_result_payload_kind(result), "blob");
  EXPECT_EQ(cubby_result_name_count(result), 0u);
  EXPECT_DOUBLE_EQ(cubby_result_compile_ms(result), 12.5);
  EXPECT_EQ(std::string(cubby_result_key(result)), cubby::blob_key("cupy", "abc.cubin").hex());
  cubby_result_free(result);
}

TEST_F(CApiBlobTest, AnotherHandleReadsTheBlobFromDisk) {
  const std::string payload = all_bytes();
  ASSERT_EQ(cubby_blob_put(cache_, "cupy", "k1", payload.data(), payload.size(), 0), CUBBY_OK);
  cubby_cache* other = reopen();
  ASSERT_NE(other, nullptr);
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_blob_get(other, "cupy", "k1", &result), CUBBY_OK) << cubby_last_error();
  ASSERT_NE(result, nullptr);
  EXPECT_STREQ(cubby_result_tier(result), "disk");
  EXPECT_EQ(payload_of(result), payload);
  cubby_result_free(result);
  EXPECT_EQ(stats_of(other)["hits_disk"], 1);
  cubby_close(other);
}

TEST_F(CApiBlobTest, AMissIsOkWithNoResultAndCountsAMiss) {
  cubby_result* result = reinterpret_cast<cubby_result*>(&result);  // must be overwritten
  ASSERT_EQ(cubby_blob_get(cache_, "cupy", "absent", &result), CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(result, nullptr);
  EXPECT_EQ(stats_of(cache_)["misses"], 1);
}

TEST_F(CApiBlobTest, NamespacesKeepTheSameNameApart) {
  ASSERT_EQ(cubby_blob_put(cache_, "one", "same", "A", 1, 0), CUBBY_OK);
  ASSERT_EQ(cubby_blob_put(cache_, "two", "same", "B", 1, 0), CUBBY_OK);
  cubby_cache* other = reopen();
  for (const auto& [ns, expected] : {std::pair{"one", "A"}, std::pair{"two", "B"}}) {
    cubby_result* result = nullptr;
    ASSERT_EQ(cubby_blob_get(other, ns, "same", &result), CUBBY_OK);
    ASSERT_NE(result, nullptr) << ns;
    EXPECT_EQ(payload_of(result), expected) << ns;
    cubby_result_free(result);
  }
  EXPECT_NE(cubby::blob_key("one", "same"), cubby::blob_key("two", "same"));
  EXPECT_NE(cubby::blob_key("a", "bc"), cubby::blob_key("ab", "c"));
  cubby_close(other);
}

TEST_F(CApiBlobTest, AnEmptyPayloadRoundTrips) {
  ASSERT_EQ(cubby_blob_put(cache_, "cupy", "empty", nullptr, 0, 0), CUBBY_OK) << cubby_last_error();
  cubby_cache* other = reopen();
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_blob_get(other, "cupy", "empty", &result), CUBBY_OK);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(payload_of(result), "");
  cubby_result_free(result);
  cubby_close(other);
}

TEST_F(CApiBlobTest, AHitCreditsTheProducingTimeAsSaved) {
  ASSERT_EQ(cubby_blob_put(cache_, "cupy", "k", "x", 1, 250.0), CUBBY_OK);
  cubby_cache* other = reopen();
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_blob_get(other, "cupy", "k", &result), CUBBY_OK);
  cubby_result_free(result);
  EXPECT_DOUBLE_EQ(stats_of(other)["compile_ms_saved"].get<double>(), 250.0);
  cubby_close(other);
}

TEST_F(CApiBlobTest, ACorruptBlobFileIsAMissAndIsRemoved) {
  ASSERT_EQ(cubby_blob_put(cache_, "cupy", "k", "payload", 7, 0), CUBBY_OK);
  const std::string hex = cubby::blob_key("cupy", "k").hex();
  const fs::path path = dir_.path() / "entries" / hex.substr(0, 2) / (hex + ".entry");
  ASSERT_TRUE(fs::exists(path));
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-1, std::ios::end);
    file.put('!');
  }
  cubby_cache* other = reopen();
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_blob_get(other, "cupy", "k", &result), CUBBY_OK);
  EXPECT_EQ(result, nullptr);
  const auto stats = stats_of(other);
  EXPECT_EQ(stats["corrupt"], 1);
  EXPECT_EQ(stats["misses"], 1);
  EXPECT_FALSE(fs::exists(path));
  cubby_close(other);
}

TEST_F(CApiBlobTest, RejectsBadArguments) {
  cubby_result* result = nullptr;
  EXPECT_EQ(cubby_blob_get(cache_, "bad ns!", "k", &result), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cubby_last_error()).find("namespace"), std::string::npos);
  EXPECT_EQ(cubby_blob_get(cache_, "", "k", &result), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_blob_get(cache_, "cupy", "", &result), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_blob_get(cache_, "cupy", "k", nullptr), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_blob_get(nullptr, "cupy", "k", &result), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_blob_get(cache_, nullptr, "k", &result), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_blob_put(cache_, "cupy", "k", nullptr, 3, 0), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_blob_put(nullptr, "cupy", "k", "x", 1, 0), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_blob_put(cache_, "cupy", nullptr, "x", 1, 0), CUBBY_ERROR_INVALID_ARGUMENT);
}

TEST_F(CApiBlobTest, ADisabledCacheNeitherStoresNorServesBlobs) {
  ScopedEnv disabled("CUBBY_DISABLE", "1");
  cubby_cache* off = reopen();
  ASSERT_EQ(cubby_blob_put(off, "cupy", "k", "x", 1, 0), CUBBY_OK);
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_blob_get(off, "cupy", "k", &result), CUBBY_OK);
  EXPECT_EQ(result, nullptr);
  cubby_close(off);
  uint64_t entries = 99;
  ASSERT_EQ(cubby_store_usage(cache_, &entries, nullptr), CUBBY_OK);
  EXPECT_EQ(entries, 0u);
}

TEST_F(CApiBlobTest, StoreUsageCountsEntriesAndClearRemovesThem) {
  uint64_t entries = 99;
  uint64_t bytes = 99;
  ASSERT_EQ(cubby_store_usage(cache_, &entries, &bytes), CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(entries, 0u);
  EXPECT_EQ(bytes, 0u);
  ASSERT_EQ(cubby_blob_put(cache_, "cupy", "a", "1234", 4, 0), CUBBY_OK);
  ASSERT_EQ(cubby_blob_put(cache_, "cupy", "b", "5678", 4, 0), CUBBY_OK);
  ASSERT_EQ(cubby_store_usage(cache_, &entries, &bytes), CUBBY_OK);
  EXPECT_EQ(entries, 2u);
  EXPECT_GT(bytes, 8u);
  uint64_t removed = 0;
  ASSERT_EQ(cubby_clear(cache_, &removed), CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(removed, 2u);
  ASSERT_EQ(cubby_store_usage(cache_, &entries, &bytes), CUBBY_OK);
  EXPECT_EQ(entries, 0u);
  EXPECT_EQ(cubby_store_usage(nullptr, &entries, &bytes), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_clear(nullptr, &removed), CUBBY_ERROR_INVALID_ARGUMENT);
}

// A clear empties the handle's memory tier too (it served cleared entries before), and a
// read-only store refuses it (it cleared the disk before).
TEST_F(CApiBlobTest, ClearTakesEntriesOutOfTheHandlesMemoryAndAReadOnlyStoreRefusesIt) {
  ASSERT_EQ(cubby_blob_put(cache_, "cupy", "a", "1234", 4, 0), CUBBY_OK);
  {
    const ScopedEnv read_only{"CUBBY_READ_ONLY", "1"};
    cubby_cache* reader = reopen();
    ASSERT_NE(reader, nullptr);
    expect_refused_as_read_only([&](uint64_t* removed) { return cubby_clear(reader, removed); });
    cubby_close(reader);
  }
  uint64_t entries = 0;
  ASSERT_EQ(cubby_store_usage(cache_, &entries, nullptr), CUBBY_OK);
  EXPECT_EQ(entries, 1u) << "the read-only clear removed entries";
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_blob_get(cache_, "cupy", "a", &result), CUBBY_OK);
  ASSERT_NE(result, nullptr);
  EXPECT_STREQ(cubby_result_tier(result), "memory");
  cubby_result_free(result);
  uint64_t removed = 0;
  ASSERT_EQ(cubby_clear(cache_, &removed), CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(removed, 1u);
  result = nullptr;
  ASSERT_EQ(cubby_blob_get(cache_, "cupy", "a", &result), CUBBY_OK);
  EXPECT_EQ(result, nullptr) << "the handle served an entry it had cleared";
  cubby_result_free(result);
}

TEST_F(CApiBlobTest, RemoveTakesTheBlobOutOfMemoryAndTheStoreAndLeavesTheOthers) {
  ASSERT_EQ(cubby_blob_put(cache_, "cuda-core", "a", "1234", 4, 0), CUBBY_OK);
  ASSERT_EQ(cubby_blob_put(cache_, "cuda-core", "b", "5678", 4, 0), CUBBY_OK);
  ASSERT_EQ(cubby_blob_put(cache_, "other", "a", "9999", 4, 0), CUBBY_OK);
  int removed = -1;
  ASSERT_EQ(cubby_blob_remove(cache_, "cuda-core", "a", &removed), CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(removed, 1);
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_blob_get(cache_, "cuda-core", "a", &result), CUBBY_OK);
  EXPECT_EQ(result, nullptr);  // not from this handle's memory either
  cubby_cache* other = reopen();
  ASSERT_EQ(cubby_blob_get(other, "cuda-core", "a", &result), CUBBY_OK);
  EXPECT_EQ(result, nullptr);
  for (const char* ns : {"cuda-core", "other"}) {
    ASSERT_EQ(cubby_blob_get(other, ns, ns == std::string("other") ? "a" : "b", &result), CUBBY_OK);
    ASSERT_NE(result, nullptr) << ns;
    cubby_result_free(result);
  }
  cubby_close(other);
  uint64_t entries = 0;
  uint64_t bytes = 0;
  ASSERT_EQ(cubby_store_usage(cache_, &entries, &bytes), CUBBY_OK);
  EXPECT_EQ(entries, 2u);
  ASSERT_EQ(cubby_blob_remove(cache_, "cuda-core", "a", &removed), CUBBY_OK);
  EXPECT_EQ(removed, 0);
  EXPECT_EQ(cubby_blob_remove(cache_, "cuda-core", "b", nullptr), CUBBY_OK);
  EXPECT_EQ(cubby_blob_remove(cache_, nullptr, "b", &removed), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_blob_remove(cache_, "bad/ns", "b", &removed), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_blob_remove(nullptr, "cuda-core", "b", &removed), CUBBY_ERROR_INVALID_ARGUMENT);
}

TEST_F(CApiBlobTest, RemoveFromAReadOnlyStoreIsAnErrorThatSaysSo) {
  ASSERT_EQ(cubby_blob_put(cache_, "cuda-core", "a", "1234", 4, 0), CUBBY_OK);
  const ScopedEnv read_only{"CUBBY_READ_ONLY", "1"};
  cubby_cache* reader = reopen();
  ASSERT_NE(reader, nullptr);
  int removed = -1;
  EXPECT_EQ(cubby_blob_remove(reader, "cuda-core", "a", &removed), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cubby_last_error()).find("read-only"), std::string::npos)
      << cubby_last_error();
  cubby_close(reader);
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_blob_get(cache_, "cuda-core", "a", &result), CUBBY_OK);
  EXPECT_NE(result, nullptr);
  cubby_result_free(result);
}

TEST_F(CApiBlobTest, NamespaceUsageCountsOnlyThatNamespacesEntries) {
  ASSERT_EQ(cubby_blob_put(cache_, "cuda-core", "a", "1234", 4, 0), CUBBY_OK);
  ASSERT_EQ(cubby_blob_put(cache_, "cuda-core", "b", "5678", 4, 0), CUBBY_OK);
  ASSERT_EQ(cubby_blob_put(cache_, "cupy", "a", "9999", 4, 0), CUBBY_OK);
  uint64_t entries = 99;
  uint64_t bytes = 99;
  ASSERT_EQ(cubby_namespace_usage(cache_, "cuda-core", &entries, &bytes), CUBBY_OK)
      << cubby_last_error();
  EXPECT_EQ(entries, 2u);
  uint64_t all_entries = 0;
  uint64_t all_bytes = 0;
  ASSERT_EQ(cubby_store_usage(cache_, &all_entries, &all_bytes), CUBBY_OK);
  EXPECT_EQ(all_entries, 3u);
  EXPECT_GT(bytes, 8u);
  EXPECT_LT(bytes, all_bytes);
  ASSERT_EQ(cubby_namespace_usage(cache_, "cupy", &entries, nullptr), CUBBY_OK);
  EXPECT_EQ(entries, 1u);
  ASSERT_EQ(cubby_namespace_usage(cache_, "programs", &entries, &bytes), CUBBY_OK);
  EXPECT_EQ(entries, 0u);
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(cubby_namespace_usage(cache_, "bad ns", &entries, &bytes),
            CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cubby_last_error()).find("namespace"), std::string::npos);
  EXPECT_EQ(cubby_namespace_usage(cache_, nullptr, &entries, &bytes), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_namespace_usage(nullptr, "cupy", &entries, &bytes), CUBBY_ERROR_INVALID_ARGUMENT);
}

TEST_F(CApiBlobTest, NamespaceClearRemovesOnlyThatNamespaceAlsoFromTheHandlesMemory) {
  ASSERT_EQ(cubby_blob_put(cache_, "cuda-core", "a", "1234", 4, 0), CUBBY_OK);
  ASSERT_EQ(cubby_blob_put(cache_, "cuda-core", "b", "5678", 4, 0), CUBBY_OK);
  ASSERT_EQ(cubby_blob_put(cache_, "cupy", "a", "9999", 4, 0), CUBBY_OK);
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_blob_get(cache_, "cuda-core", "a", &result), CUBBY_OK);
  ASSERT_NE(result, nullptr);
  EXPECT_STREQ(cubby_result_tier(result), "memory");  // the handle's memory tier holds it
  cubby_result_free(result);

  uint64_t removed = 99;
  ASSERT_EQ(cubby_namespace_clear(cache_, "cuda-core", &removed), CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(removed, 2u);
  for (const char* name : {"a", "b"}) {
    result = reinterpret_cast<cubby_result*>(&result);  // must be overwritten
    ASSERT_EQ(cubby_blob_get(cache_, "cuda-core", name, &result), CUBBY_OK);
    EXPECT_EQ(result, nullptr) << name << " was served after its namespace was cleared";
  }
  ASSERT_EQ(cubby_blob_get(cache_, "cupy", "a", &result), CUBBY_OK);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(payload_of(result), "9999");
  cubby_result_free(result);
  uint64_t entries = 99;
  ASSERT_EQ(cubby_namespace_usage(cache_, "cuda-core", &entries, nullptr), CUBBY_OK);
  EXPECT_EQ(entries, 0u);
  ASSERT_EQ(cubby_store_usage(cache_, &entries, nullptr), CUBBY_OK);
  EXPECT_EQ(entries, 1u);
  ASSERT_EQ(cubby_store_estimate(cache_, &entries, nullptr), CUBBY_OK);
  EXPECT_EQ(entries, 1u);  // the size estimate follows

  ASSERT_EQ(cubby_namespace_clear(cache_, "cuda-core", nullptr), CUBBY_OK);  // nothing left
  EXPECT_EQ(cubby_namespace_clear(cache_, "bad/ns", &removed), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(removed, 0u);
  EXPECT_EQ(cubby_namespace_clear(cache_, nullptr, &removed), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_namespace_clear(nullptr, "cupy", &removed), CUBBY_ERROR_INVALID_ARGUMENT);
}

TEST_F(CApiBlobTest, NamespaceClearOfAReadOnlyStoreIsAnErrorThatSaysSoAndRemovesNothing) {
  ASSERT_EQ(cubby_blob_put(cache_, "cuda-core", "a", "1234", 4, 0), CUBBY_OK);
  const ScopedEnv read_only{"CUBBY_READ_ONLY", "1"};
  cubby_cache* reader = reopen();
  ASSERT_NE(reader, nullptr);
  expect_refused_as_read_only(
      [&](uint64_t* removed) { return cubby_namespace_clear(reader, "cuda-core", removed); });
  uint64_t entries = 0;
  ASSERT_EQ(cubby_namespace_usage(reader, "cuda-core", &entries, nullptr), CUBBY_OK);
  EXPECT_EQ(entries, 1u);  // counting reads only
  cubby_close(reader);
}

TEST_F(CApiBlobTest, ADisabledHandleNeitherCountsNorClearsANamespace) {
  ASSERT_EQ(cubby_blob_put(cache_, "cuda-core", "a", "1234", 4, 0), CUBBY_OK);
  const ScopedEnv disabled("CUBBY_DISABLE", "1");
  cubby_cache* off = reopen();
  uint64_t entries = 99;
  ASSERT_EQ(cubby_namespace_usage(off, "cuda-core", &entries, nullptr), CUBBY_OK);
  EXPECT_EQ(entries, 0u);
  uint64_t removed = 99;
  ASSERT_EQ(cubby_namespace_clear(off, "cuda-core", &removed), CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(removed, 0u);
  cubby_close(off);
  ASSERT_EQ(cubby_namespace_usage(cache_, "cuda-core", &entries, nullptr), CUBBY_OK);
  EXPECT_EQ(entries, 1u);
}

TEST_F(CApiBlobTest, StoreDirIsTheFolderOpened) {
  EXPECT_EQ(fs::path(cubby_store_dir(cache_)), dir_.path());
  EXPECT_EQ(cubby_store_dir(nullptr), nullptr);
}

TEST_F(CApiBlobTest, ExplainListsTheKeyFields) {
  const char* const names[] = {"k<float>"};
  const char* json = cubby_explain_json(cache_, "template <class T> __global__ void k() {}",
                                        nullptr, names, 1, nullptr, 0, "sm_90");
  ASSERT_NE(json, nullptr) << cubby_last_error();
  const auto fields = nlohmann::json::parse(json);
  ASSERT_TRUE(fields.is_array());
  bool has_arch = false;
  for (const auto& field : fields) {
    EXPECT_EQ(field["hash"].get<std::string>().size(), 32u);
    if (field["label"] == "arch") has_arch = field["summary"].get<std::string>() == "sm_90";
  }
  EXPECT_TRUE(has_arch) << json;
  EXPECT_EQ(cubby_explain_json(cache_, nullptr, nullptr, nullptr, 0, nullptr, 0, nullptr), nullptr);
  EXPECT_EQ(cubby_explain_json(nullptr, "x", nullptr, nullptr, 0, nullptr, 0, nullptr), nullptr);
}

TEST(Blob, EntriesRecordTheirNamespaceAndName) {
  const cubby::Entry entry = cubby::blob_entry("cupy", "n", "bytes", 7);
  EXPECT_EQ(entry.kind, cubby::PayloadKind::blob);
  EXPECT_TRUE(cubby::is_blob_of(entry, "cupy", "n"));
  EXPECT_FALSE(cubby::is_blob_of(entry, "cupy", "m"));
  EXPECT_FALSE(cubby::is_blob_of(entry, "other", "n"));
  const std::string bytes = cubby::encode_entry(cubby::blob_key("cupy", "n"), entry);
  auto decoded = cubby::decode_entry(bytes, cubby::blob_key("cupy", "n"));
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(*decoded, entry);
  EXPECT_FALSE(cubby::decode_entry(bytes, cubby::blob_key("cupy", "m")).ok());
}

}  // namespace
