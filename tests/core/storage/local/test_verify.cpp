// Entry verification and self-repair (core/src/storage/local/verify.cpp, and the orchestrator's
// use of it): the corruption matrix — truncation at every region boundary and a flipped byte in
// every region of a real entry — is detected, never served, and repaired.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "cubby/cache.hpp"
#include "cubby/nvrtc.hpp"
#include "storage/local/store_stats.hpp"
#include "storage/local/verify.hpp"
#include "test_support.hpp"
#include "util/bytes.hpp"

namespace cubby {
namespace {

using testing::read_text;
using testing::TempDir;
using testing::write_text;

CompileRequest request() {
  CompileRequest r;
  r.source = "namespace ns { template <class T> __global__ void k(T* p) { p[0] = T(2); } }\n";
  r.program_name = "verify_test.cu";
  r.name_expressions = {"ns::k<float>", "ns::k<int>"};
  r.arch = "sm_90";
  r.options = {"-DVERIFY_TEST"};
  return r;
}

// The key of request() (in any store: no base folder, no remote).
const Key& request_key() {
  static const Key key = [] {
    TempDir dir("verify-key");
    Config config;
    config.dir = dir.path();
    return Cache(config).key_of(request());
  }();
  return key;
}

// What a store upgraded from format version 1 holds: an entry without a key.
std::string version_1_entry() {
  return read_text(std::filesystem::path(CUBBY_TEST_DATA_DIR) / "golden/entry_v1_basic.bin");
}

// request()'s entry, stored under request_key().
const std::string& good_bytes() {
  static const std::string bytes = [] {
    auto entry = compile_nvrtc(request());
    if (!entry) throw Error(std::move(entry).error());
    return encode_entry(request_key(), *entry);
  }();
  return bytes;
}

// Named regions [begin, end) of an encoded entry, per the grammar in entry.hpp.
std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> regions_of(
    const std::string& b) {
  std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> regions = {
      {"magic", {0, 8}},      {"version", {8, 12}},    {"kind", {12, 13}}, {"reserved", {13, 16}},
      {"checksum", {16, 32}}, {"body_size", {32, 40}}, {"key", {40, 56}}};
  std::size_t at = 56;
  auto str = [&] { at += 4 + load_le<std::uint32_t>(b, at); };
  const std::size_t names = at;
  const auto count = load_le<std::uint32_t>(b, at);
  at += 4;
  for (std::uint64_t i = 0; i < 2 * count; ++i) str();
  regions.push_back({"names", {names, at}});
  const std::size_t log = at;
  str();
  regions.push_back({"log", {log, at}});
  regions.push_back({"compile_us", {at, at + 8}});
  at += 8;
  const std::size_t options = at;
  const auto option_count = load_le<std::uint32_t>(b, at);
  at += 4;
  for (std::uint64_t i = 0; i < option_count; ++i) str();
  regions.push_back({"options", {options, at}});
  regions.push_back({"created_ms", {at, at + 8}});
  at += 8;
  regions.push_back({"payload_size", {at, at + 8}});
  const auto payload = load_le<std::uint64_t>(b, at);
  at += 8;
  regions.push_back({"payload", {at, at + payload}});
  EXPECT_EQ(at + payload, b.size());
  return regions;
}

TEST(VerifyEntry, AGoodEntryVerifies) {
  auto entry = verify_entry(good_bytes(), request_key());
  ASSERT_TRUE(entry.ok()) << entry.error().message;
  EXPECT_EQ(entry->lowered_names.size(), 2u);
}

TEST(VerifyEntry, AGoodEntryUnderAnotherKeyIsRejected) {
  Key other = request_key();
  other.bytes[15] ^= 1;
  auto entry = verify_entry(good_bytes(), other);
  ASSERT_FALSE(entry.ok());
  EXPECT_EQ(entry.error().code, Errc::corrupt);
  EXPECT_NE(entry.error().message.find("belongs to key " + request_key().hex()), std::string::npos)
      << entry.error().message;
}

TEST(VerifyEntry, TruncationAtEveryRegionBoundaryIsDetected) {
  const std::string& good = good_bytes();
  const auto regions = regions_of(good);
  ASSERT_EQ(regions.size(), 14u);
  for (const auto& [name, range] : regions) {
    for (const std::size_t cut : {range.first, range.first + 1, range.second - 1}) {
      if (cut >= good.size()) continue;
      auto entry = verify_entry(std::string_view(good).substr(0, cut), request_key());
      ASSERT_FALSE(entry.ok()) << "truncated at " << cut << " (" << name << ")";
      EXPECT_EQ(entry.error().code, Errc::corrupt);
    }
  }
  EXPECT_FALSE(verify_entry(good + "x", request_key()).ok());  // trailing bytes
}

TEST(VerifyEntry, AFlippedByteInEveryRegionIsDetected) {
  const std::string& good = good_bytes();
  for (const auto& [name, range] : regions_of(good)) {
    ASSERT_LT(range.first, range.second) << name;
    for (const std::size_t at : {range.first, (range.first + range.second) / 2, range.second - 1}) {
      std::string bad = good;
      bad[at] = static_cast<char>(bad[at] ^ 0x20);
      auto entry = verify_entry(bad, request_key());
      ASSERT_FALSE(entry.ok()) << "flipped byte " << at << " (" << name << ")";
      // A flipped version reads as another cubby release's entry: a miss, not damage.
      EXPECT_EQ(entry.error().code, name == "version" ? Errc::not_found : Errc::corrupt) << name;
    }
  }
}

TEST(VerifyEntry, ALoweredNameMissingFromItsCubinIsDetected) {
  auto entry = decode_entry(good_bytes(), request_key());
  ASSERT_TRUE(entry.ok());
  entry->lowered_names["ns::k<float>"] = "_Z9not_a_symbolPf";
  // A valid checksum over a wrong map.
  auto checked = verify_entry(encode_entry(request_key(), *entry), request_key());
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(checked.error().message.find("_Z9not_a_symbolPf"), std::string::npos);
  entry->payload = "not an ELF file";
  EXPECT_FALSE(verify_entry(encode_entry(request_key(), *entry), request_key()).ok());
}

TEST(VerifyEntry, OtherFormatsAreRecognisedNotJudged) {
  std::string newer = good_bytes();
  newer[8] = static_cast<char>(kEntryFormatVersion + 1);
  auto entry = verify_entry(newer, request_key());
  ASSERT_FALSE(entry.ok());
  EXPECT_EQ(entry.error().code, Errc::not_found);
  entry = verify_entry(version_1_entry(), request_key());
  ASSERT_FALSE(entry.ok());
  EXPECT_EQ(entry.error().code, Errc::not_found);
}

TEST(VerifyStore, ReportsBadEntriesFixRemovesThemKeepsOtherFormatsAndForeignFiles) {
  TempDir dir("verify");
  DiskTier disk(dir.path());
  const Key good_key = request_key();
  Key bad_key = Key::parse("22222222222222222222222222222222").value();
  Key newer_key = Key::parse("33333333333333333333333333333333").value();
  Key older_key = Key::parse("44444444444444444444444444444444").value();
  Key copied_key = Key::parse("55555555555555555555555555555555").value();
  std::string newer = good_bytes();
  newer[8] = static_cast<char>(kEntryFormatVersion + 1);
  ASSERT_TRUE(disk.put(good_key, good_bytes()).ok());
  ASSERT_TRUE(disk.put(bad_key, good_bytes().substr(0, 100)).ok());
  ASSERT_TRUE(disk.put(newer_key, newer).ok());
  ASSERT_TRUE(disk.put(older_key, version_1_entry()).ok());
  ASSERT_TRUE(disk.put(copied_key, good_bytes()).ok());  // a good entry, of another key
  write_text(dir / "entries/11/foreign.bin", "not ours");
  std::vector<std::string> bad;
  auto report = verify_store(disk, false, [&](const DiskEntryInfo& info, const std::string& why) {
    bad.push_back(info.key.hex());
    EXPECT_FALSE(why.empty());
  });
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->entries, 5u);
  EXPECT_EQ(report->bad, 2u);
  EXPECT_EQ(report->newer, 1u);
  EXPECT_EQ(report->older, 1u);
  EXPECT_EQ(report->removed, 0u);
  std::sort(bad.begin(), bad.end());
  EXPECT_EQ(bad, (std::vector<std::string>{bad_key.hex(), copied_key.hex()}));
  auto fixed = verify_store(disk, true, [](const DiskEntryInfo&, const std::string&) {});
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->removed, 2u);
  EXPECT_FALSE(std::filesystem::exists(disk.path_of(bad_key)));
  EXPECT_FALSE(std::filesystem::exists(disk.path_of(copied_key)));
  EXPECT_TRUE(std::filesystem::exists(disk.path_of(good_key)));
  EXPECT_TRUE(std::filesystem::exists(disk.path_of(newer_key)));
  EXPECT_TRUE(std::filesystem::exists(disk.path_of(older_key)));
  EXPECT_TRUE(std::filesystem::exists(dir / "entries/11/foreign.bin"));
}

// Self-repair through the orchestrator: every corruption of the matrix is a counted miss, the
// entry is recompiled and the store holds a good entry afterwards.
TEST(SelfRepair, EveryCorruptionIsACountedMissThatIsRecompiledAndRepaired) {
  TempDir dir("verify");
  Config config;
  config.dir = dir.path();
  const std::string& good = good_bytes();
  std::vector<std::string> corruptions;
  for (const auto& [name, range] : regions_of(good)) {
    corruptions.push_back(good.substr(0, range.first));
    std::string flipped = good;
    flipped[(range.first + range.second) / 2] ^= 0x01;
    corruptions.push_back(flipped);
  }
  // The whole entry, as another key's (copied or linked to this key's file).
  Key other = request_key();
  other.bytes[0] ^= 1;
  corruptions.push_back(encode_entry(other, decode_entry(good, request_key()).value()));
  std::uint64_t expected_corrupt = 0;
  for (const std::string& bytes : corruptions) {
    // A flipped version byte reads as another release's entry: a plain miss, replaced the same way.
    const bool other_format = entry_format(bytes) != EntryFormat::current;
    Cache cache(config);
    const Key key = cache.key_of(request());
    write_text(DiskTier(cache.config().dir).path_of(key), bytes);
    const CacheResult result = cache.compile(request());
    EXPECT_FALSE(result.hit);
    EXPECT_EQ(result.tier, Source::compiled);
    EXPECT_EQ(cache.stats().corrupt, other_format ? 0u : 1u);
    EXPECT_EQ(cache.stats().compiles, 1u);
    expected_corrupt += other_format ? 0 : 1;
    EXPECT_TRUE(verify_entry(read_text(DiskTier(cache.config().dir).path_of(key)), key).ok());
  }
  auto counters = StoreStats(dir.path()).read();
  ASSERT_TRUE(counters.ok());
  EXPECT_EQ((*counters)["corrupt"], static_cast<std::int64_t>(expected_corrupt));
}

}  // namespace
}  // namespace cubby
