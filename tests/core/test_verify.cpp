// Entry verification and self-repair (core/src/storage/local/verify.cpp, and the orchestrator's
// use of it): the corruption matrix — truncation at every region boundary and a flipped byte in
// every region of a real entry — is detected, never served, and repaired.
#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

#include "cubby/cache.hpp"
#include "cubby/nvrtc.hpp"
#include "cubby/storage/store_stats.hpp"
#include "cubby/storage/verify.hpp"
#include "test_support.hpp"

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

const std::string& good_bytes() {
  static const std::string bytes = [] {
    auto entry = compile_nvrtc(request());
    if (!entry) throw Error(std::move(entry).error());
    return encode_entry(*entry);
  }();
  return bytes;
}

std::uint64_t u32_at(const std::string& b, std::size_t at) {
  std::uint32_t v = 0;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
std::uint64_t u64_at(const std::string& b, std::size_t at) {
  std::uint64_t v = 0;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

// Named regions [begin, end) of an encoded entry, per the grammar in entry.hpp.
std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> regions_of(
    const std::string& b) {
  std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> regions = {
      {"magic", {0, 8}},      {"version", {8, 12}},   {"kind", {12, 13}},
      {"reserved", {13, 16}}, {"checksum", {16, 32}}, {"body_size", {32, 40}}};
  std::size_t at = 40;
  auto str = [&] { at += 4 + u32_at(b, at); };
  const std::size_t names = at;
  const auto count = u32_at(b, at);
  at += 4;
  for (std::uint64_t i = 0; i < 2 * count; ++i) str();
  regions.push_back({"names", {names, at}});
  const std::size_t log = at;
  str();
  regions.push_back({"log", {log, at}});
  regions.push_back({"compile_us", {at, at + 8}});
  at += 8;
  const std::size_t options = at;
  const auto option_count = u32_at(b, at);
  at += 4;
  for (std::uint64_t i = 0; i < option_count; ++i) str();
  regions.push_back({"options", {options, at}});
  regions.push_back({"created_ms", {at, at + 8}});
  at += 8;
  regions.push_back({"payload_size", {at, at + 8}});
  const auto payload = u64_at(b, at);
  at += 8;
  regions.push_back({"payload", {at, at + payload}});
  EXPECT_EQ(at + payload, b.size());
  return regions;
}

TEST(VerifyEntry, AGoodEntryVerifies) {
  auto entry = verify_entry(good_bytes());
  ASSERT_TRUE(entry.ok()) << entry.error().message;
  EXPECT_EQ(entry->lowered_names.size(), 2u);
}

TEST(VerifyEntry, TruncationAtEveryRegionBoundaryIsDetected) {
  const std::string& good = good_bytes();
  const auto regions = regions_of(good);
  ASSERT_EQ(regions.size(), 13u);
  for (const auto& [name, range] : regions) {
    for (const std::size_t cut : {range.first, range.first + 1, range.second - 1}) {
      if (cut >= good.size()) continue;
      auto entry = verify_entry(std::string_view(good).substr(0, cut));
      ASSERT_FALSE(entry.ok()) << "truncated at " << cut << " (" << name << ")";
      EXPECT_EQ(entry.error().code, Errc::corrupt);
    }
  }
  EXPECT_FALSE(verify_entry(good + "x").ok());  // trailing bytes
}

TEST(VerifyEntry, AFlippedByteInEveryRegionIsDetected) {
  const std::string& good = good_bytes();
  for (const auto& [name, range] : regions_of(good)) {
    ASSERT_LT(range.first, range.second) << name;
    for (const std::size_t at : {range.first, (range.first + range.second) / 2, range.second - 1}) {
      std::string bad = good;
      bad[at] = static_cast<char>(bad[at] ^ 0x20);
      auto entry = verify_entry(bad);
      ASSERT_FALSE(entry.ok()) << "flipped byte " << at << " (" << name << ")";
      EXPECT_EQ(entry.error().code, Errc::corrupt);
    }
  }
}

TEST(VerifyEntry, ALoweredNameMissingFromItsCubinIsDetected) {
  auto entry = decode_entry(good_bytes());
  ASSERT_TRUE(entry.ok());
  entry->lowered_names["ns::k<float>"] = "_Z9not_a_symbolPf";
  auto checked = verify_entry(encode_entry(*entry));  // a valid checksum over a wrong map
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(checked.error().message.find("_Z9not_a_symbolPf"), std::string::npos);
  entry->payload = "not an ELF file";
  EXPECT_FALSE(verify_entry(encode_entry(*entry)).ok());
}

TEST(VerifyEntry, NewerFormatIsRecognisedNotJudged) {
  std::string newer = good_bytes();
  newer[8] = static_cast<char>(kEntryFormatVersion + 1);
  EXPECT_TRUE(is_newer_format(newer));
  EXPECT_FALSE(is_newer_format(good_bytes()));
  EXPECT_FALSE(is_newer_format("CUBBYENT"));
  EXPECT_FALSE(is_newer_format("garbage garbage garbage"));
}

TEST(VerifyStore, ReportsBadEntriesFixRemovesThemKeepsNewerAndForeignFiles) {
  TempDir dir("verify");
  DiskTier disk(dir.path());
  Key good_key = Key::parse("11111111111111111111111111111111").value();
  Key bad_key = Key::parse("22222222222222222222222222222222").value();
  Key newer_key = Key::parse("33333333333333333333333333333333").value();
  std::string newer = good_bytes();
  newer[8] = static_cast<char>(kEntryFormatVersion + 1);
  ASSERT_TRUE(disk.put(good_key, good_bytes()).ok());
  ASSERT_TRUE(disk.put(bad_key, good_bytes().substr(0, 100)).ok());
  ASSERT_TRUE(disk.put(newer_key, newer).ok());
  write_text(dir / "entries/11/foreign.bin", "not ours");
  std::vector<std::string> bad;
  auto report = verify_store(disk, false, [&](const DiskEntryInfo& info, const std::string& why) {
    bad.push_back(info.key.hex());
    EXPECT_FALSE(why.empty());
  });
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->entries, 3u);
  EXPECT_EQ(report->bad, 1u);
  EXPECT_EQ(report->newer, 1u);
  EXPECT_EQ(report->removed, 0u);
  EXPECT_EQ(bad, std::vector<std::string>{bad_key.hex()});
  auto fixed = verify_store(disk, true, [](const DiskEntryInfo&, const std::string&) {});
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->removed, 1u);
  EXPECT_FALSE(std::filesystem::exists(disk.path_of(bad_key)));
  EXPECT_TRUE(std::filesystem::exists(disk.path_of(good_key)));
  EXPECT_TRUE(std::filesystem::exists(disk.path_of(newer_key)));
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
  std::uint64_t expected_corrupt = 0;
  for (const std::string& bytes : corruptions) {
    Cache cache(config);
    const Key key = cache.key_of(request());
    write_text(cache.disk().path_of(key), bytes);
    const CacheResult result = cache.compile(request());
    EXPECT_FALSE(result.hit);
    EXPECT_EQ(result.tier, Source::compiled);
    EXPECT_EQ(cache.stats().corrupt, 1u);
    EXPECT_EQ(cache.stats().compiles, 1u);
    ++expected_corrupt;
    EXPECT_TRUE(verify_entry(read_text(cache.disk().path_of(key))).ok());
  }
  auto counters = StoreStats(dir.path()).read();
  ASSERT_TRUE(counters.ok());
  EXPECT_EQ((*counters)["corrupt"], static_cast<std::int64_t>(expected_corrupt));
}

}  // namespace
}  // namespace cubby
