// Tests for core/src/format/entry.cpp: the entry format (grammar in cubby/entry.hpp).
//
// Golden files: tests/golden/entry_v<version>_*.bin hold encode_entry of the fixed entries built
// below. After an intended format change (which must also bump kEntryFormatVersion), regenerate
// them with:   CUBBY_UPDATE_GOLDEN=1 ./test_entry
// The files of older versions stay: they show that entries of an older cubby are a miss.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "cubby/entry.hpp"
#include "cubby/key.hpp"
#include "format/entry_in_place.hpp"
#include "util/bytes.hpp"
#include "util/hash.hpp"

namespace cubby {
namespace {

// The key the golden entries (and most tests') are stored under.
const Key kKey = Key::parse("00112233445566778899aabbccddeeff").value();

std::string bytes_of(std::initializer_list<int> values) {
  std::string out;
  for (const int v : values) out.push_back(static_cast<char>(v));
  return out;
}

Entry rich_entry() {
  Entry entry;
  entry.kind = PayloadKind::cubin;
  entry.lowered_names = {
      {"ns::scale<float, cuda::std::dextents<size_t, 2>>",
       "_ZN2ns5scaleIfN4cuda3std3__"
       "47extentsImJLm18446744073709551615ELm18446744073709551615EEEEEvv"},
      {"ns::k<float, 256>", "_ZN2ns1kIfLi256EEEvPT_"},
      {"ns::v2::k<float,256>", "_ZN2ns1kIfLi256EEEvPT_"},
      {"counter", "_ZN6detail7counterE"},
      {std::string("with\0nul", 8), std::string("low\0er", 6)},
  };
  entry.log = "kernel.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n\n";
  entry.compile_us = 2'213'456;
  entry.options = {"-std=c++17", "--gpu-architecture=sm_90", "-I", "/opt/include", "", "-DX=1"};
  entry.created_ms = 1'717'171'717'171;
  entry.payload = bytes_of({0x7f, 'E', 'L', 'F', 0, 0, 1, 0xff, 0, 0x80});
  return entry;
}

// The entry the golden file entry_v<N>_basic.bin holds. Changing it changes the golden bytes.
Entry golden_basic_entry() {
  Entry entry;
  entry.kind = PayloadKind::cubin;
  entry.lowered_names = {{"ns::k<float, 256>", "_ZN2ns1kIfLi256EEEvPT_"},
                         {"ns::scale<double>", "_ZN2ns5scaleIdEEvPT_"}};
  entry.log = "warning: something\n";
  entry.compile_us = 1234567;
  entry.options = {"-std=c++17", "--gpu-architecture=sm_90"};
  entry.created_ms = 1700000000123;
  entry.payload = bytes_of({0x7f, 'E', 'L', 'F', 2, 1, 1, 0x33, 0, 0, 0xff, 0xfe});
  return entry;
}

// The entry the golden file entry_v<N>_ptx_empty.bin holds: no names, no log, no payload.
Entry golden_empty_ptx_entry() {
  Entry entry;
  entry.kind = PayloadKind::ptx;
  entry.created_ms = -5;
  return entry;
}

// Recomputes body_size and the checksum per the grammar, independently of encode_entry, so
// tests can build structurally bad bodies that pass the checksum.
std::string reseal(std::string bytes) {
  store_le(bytes.data() + 32, static_cast<std::uint64_t>(bytes.size() - kEntryHeaderSize));
  std::memset(bytes.data() + 16, 0, 16);
  const auto checksum = hash128(bytes);
  std::memcpy(bytes.data() + 16, checksum.data(), checksum.size());
  return bytes;
}

// A header (magic, version, cubin, the zero key Key{}) followed by `body`, sealed.
std::string sealed(const std::string& body) {
  std::string bytes = "CUBBYENT";
  bytes.append(4, '\0');
  store_le(bytes.data() + 8, kEntryFormatVersion);
  bytes.push_back(1);
  bytes.append(3 + 16 + 8 + 16, '\0');
  bytes += body;
  return reseal(bytes);
}

std::string u32le(std::uint32_t value) {
  std::string out;
  put_le(out, value);
  return out;
}

std::string u64le(std::uint64_t value) {
  std::string out;
  put_le(out, value);
  return out;
}

std::string str_field(const std::string& value) {
  return u32le(static_cast<std::uint32_t>(value.size())) + value;
}

// A byte range of an encoded entry, named after a grammar element.
struct Region {
  std::string name;
  std::size_t begin;
  std::size_t end;
  std::string expected_message;  // a phrase the decode failure must contain
  Errc expected_code = Errc::corrupt;
};

// Splits an encoded entry into its grammar regions by walking the grammar (not the decoder).
std::vector<Region> regions_of(const std::string& bytes) {
  std::vector<Region> regions = {{"magic", 0, 8, "bad magic"},
                                 {"version", 8, 12, "format version", Errc::not_found},
                                 {"kind", 12, 13, "unknown payload kind"},
                                 {"reserved", 13, 16, "reserved header byte"},
                                 {"checksum", 16, 32, "checksum mismatch"},
                                 {"body_size", 32, 40, ""},
                                 {"key", 40, 56, "checksum mismatch"}};
  std::size_t pos = kEntryHeaderSize;
  auto skip_str = [&] { pos += 4 + load_le<std::uint32_t>(bytes, pos); };
  const std::size_t names_begin = pos;
  const std::uint64_t names = load_le<std::uint32_t>(bytes, pos);
  pos += 4;
  for (std::uint64_t i = 0; i < 2 * names; ++i) skip_str();
  regions.push_back({"names", names_begin, pos, "checksum mismatch"});
  const std::size_t log_begin = pos;
  skip_str();
  regions.push_back({"log", log_begin, pos, "checksum mismatch"});
  regions.push_back({"compile_us", pos, pos + 8, "checksum mismatch"});
  pos += 8;
  const std::size_t options_begin = pos;
  const std::uint64_t options = load_le<std::uint32_t>(bytes, pos);
  pos += 4;
  for (std::uint64_t i = 0; i < options; ++i) skip_str();
  regions.push_back({"options", options_begin, pos, "checksum mismatch"});
  regions.push_back({"created_ms", pos, pos + 8, "checksum mismatch"});
  pos += 8;
  regions.push_back({"payload", pos, bytes.size(), "checksum mismatch"});
  return regions;
}

std::filesystem::path golden_path(const std::string& variant) {
  return std::filesystem::path(CUBBY_TEST_DATA_DIR) / "golden" /
         ("entry_v" + std::to_string(kEntryFormatVersion) + "_" + variant + ".bin");
}

std::string read_binary(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void check_golden(const std::string& variant, const Entry& entry) {
  const std::string encoded = encode_entry(kKey, entry);
  const auto path = golden_path(variant);
  const char* update = std::getenv("CUBBY_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(encoded.data(), static_cast<std::streamsize>(encoded.size()));
    ASSERT_TRUE(out.good()) << "cannot write " << path;
  }
  ASSERT_TRUE(std::filesystem::exists(path))
      << path << " is missing; generate it with CUBBY_UPDATE_GOLDEN=1";
  const std::string golden = read_binary(path);
  EXPECT_EQ(golden, encoded)
      << "encode_entry no longer produces " << path
      << ". A format change must bump kEntryFormatVersion and regenerate the golden files "
         "(CUBBY_UPDATE_GOLDEN=1).";
  auto decoded = decode_entry(golden, kKey);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(*decoded, entry);
}

TEST(Entry, DecodingInPlaceGivesTheSameEntryAndTakesTheBufferOnlyOnSuccess) {
  Entry entry = rich_entry();
  entry.payload.assign(300000, 'c');  // a CUBIN-sized payload
  std::string bytes = encode_entry(kKey, entry);
  const std::string copy = bytes;
  auto copied = decode_entry(copy, kKey);
  ASSERT_TRUE(copied.ok()) << copied.error().message;
  const char* buffer = bytes.data();
  auto taken = decode_entry_in_place(std::move(bytes), kKey);
  ASSERT_TRUE(taken.ok()) << taken.error().message;
  EXPECT_EQ(*taken, *copied);
  EXPECT_EQ(*taken, entry);
  EXPECT_EQ(taken->payload.data(), buffer);  // the read's buffer, not a copy
  std::string damaged = copy;
  damaged.back() ^= 1;
  const std::string why = decode_entry(damaged, kKey).error().message;
  auto refused = decode_entry_in_place(std::move(damaged), kKey);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, why);
  // NOLINTNEXTLINE(bugprone-use-after-move): a refused buffer is left as it was (the contract)
  EXPECT_EQ(damaged.size(), copy.size());
  auto other_key = decode_entry_in_place(std::string(copy), Key{});
  EXPECT_FALSE(other_key.ok());
}

TEST(Entry, PayloadKindNames) {
  EXPECT_STREQ(payload_kind_name(PayloadKind::cubin), "cubin");
  EXPECT_STREQ(payload_kind_name(PayloadKind::ptx), "ptx");
  EXPECT_STREQ(payload_kind_name(PayloadKind::ltoir), "ltoir");
}

TEST(Entry, RoundTripsRichEntry) {
  const Entry entry = rich_entry();
  auto decoded = decode_entry(encode_entry(kKey, entry), kKey);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(*decoded, entry);
  EXPECT_EQ(decoded->lowered_names.at(std::string("with\0nul", 8)), std::string("low\0er", 6));
}

TEST(Entry, RoundTripsEveryKindAndEdgeValues) {
  for (const PayloadKind kind : {PayloadKind::cubin, PayloadKind::ptx, PayloadKind::ltoir}) {
    Entry entry;
    entry.kind = kind;
    entry.compile_us = UINT64_MAX;
    entry.created_ms = INT64_MIN;
    auto decoded = decode_entry(encode_entry(kKey, entry), kKey);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(*decoded, entry);
    EXPECT_TRUE(decoded->payload.empty());
  }
}

TEST(Entry, RoundTripsBigBinaryPayload) {
  Entry entry = rich_entry();
  std::mt19937 random(7);
  entry.payload.resize(3u << 20);
  for (char& c : entry.payload) c = static_cast<char>(random() & 0xff);
  entry.payload[0] = '\0';
  const std::string encoded = encode_entry(kKey, entry);
  auto decoded = decode_entry(encoded, kKey);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded->payload, entry.payload);
  EXPECT_EQ(*decoded, entry);
}

// Checks the encoded layout against the grammar field by field, without the decoder.
TEST(Entry, LayoutFollowsTheGrammar) {
  const Entry entry = golden_basic_entry();
  const std::string bytes = encode_entry(kKey, entry);
  ASSERT_GE(bytes.size(), kEntryHeaderSize);
  EXPECT_EQ(bytes.substr(0, 8), "CUBBYENT");
  EXPECT_EQ(load_le<std::uint32_t>(bytes, 8), kEntryFormatVersion);
  EXPECT_EQ(load_le<std::uint8_t>(bytes, 12), 1u);
  EXPECT_EQ(bytes.substr(13, 3), std::string(3, '\0'));
  EXPECT_EQ(load_le<std::uint64_t>(bytes, 32), bytes.size() - kEntryHeaderSize);
  EXPECT_EQ(bytes.substr(40, 16),
            std::string(reinterpret_cast<const char*>(kKey.bytes.data()), 16));
  EXPECT_EQ(kEntryHeaderSize, 56u);
  std::string zeroed = bytes;
  std::memset(zeroed.data() + 16, 0, 16);
  const auto checksum = hash128(zeroed);
  EXPECT_EQ(bytes.substr(16, 16), std::string(reinterpret_cast<const char*>(checksum.data()), 16));

  std::string body;
  body += u32le(2);
  body += str_field("ns::k<float, 256>") + str_field("_ZN2ns1kIfLi256EEEvPT_");
  body += str_field("ns::scale<double>") + str_field("_ZN2ns5scaleIdEEvPT_");
  body += str_field("warning: something\n");
  body += u64le(1234567);
  body += u32le(2) + str_field("-std=c++17") + str_field("--gpu-architecture=sm_90");
  body += u64le(1700000000123);
  body += u64le(entry.payload.size()) + entry.payload;
  EXPECT_EQ(bytes.substr(kEntryHeaderSize), body);
}

TEST(Entry, GoldenBasic) { check_golden("basic", golden_basic_entry()); }

TEST(Entry, GoldenEmptyPtx) { check_golden("ptx_empty", golden_empty_ptx_entry()); }

// A format change must touch both the version constant and the golden files: the golden file
// is named after the version, and the version in its header must be the current one.
TEST(Entry, GoldenVersionMatchesFormatVersion) {
  const std::string golden = read_binary(golden_path("basic"));
  ASSERT_GE(golden.size(), kEntryHeaderSize) << golden_path("basic");
  EXPECT_EQ(golden.substr(0, 8), "CUBBYENT");
  EXPECT_EQ(load_le<std::uint32_t>(golden, 8), kEntryFormatVersion);
}

// The golden files of version 1 (no key in the header) stay: an entry of an older cubby is a miss
// (Errc::not_found) under any key, never damage; one of a newer cubby too.
TEST(Entry, AnEntryOfAnotherFormatVersionIsAMissThatSaysWhy) {
  for (const char* variant : {"basic", "ptx_empty"}) {
    const auto path = std::filesystem::path(CUBBY_TEST_DATA_DIR) / "golden" /
                      (std::string("entry_v1_") + variant + ".bin");
    const std::string old = read_binary(path);
    ASSERT_EQ(load_le<std::uint32_t>(old, 8), 1u) << path;
    EXPECT_EQ(entry_format(old), EntryFormat::older);
    auto decoded = decode_entry(old, kKey);
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.error().code, Errc::not_found);
    EXPECT_NE(decoded.error().message.find("format version 1, older"), std::string::npos)
        << decoded.error().message;
  }
  std::string newer = encode_entry(kKey, rich_entry());
  store_le(newer.data() + 8, kEntryFormatVersion + 1);
  EXPECT_EQ(entry_format(newer), EntryFormat::newer);
  auto decoded = decode_entry(newer, kKey);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.error().code, Errc::not_found);
  EXPECT_NE(decoded.error().message.find("format version " +
                                         std::to_string(kEntryFormatVersion + 1) + ", newer"),
            std::string::npos)
      << decoded.error().message;
  EXPECT_EQ(entry_format(encode_entry(kKey, rich_entry())), EntryFormat::current);
  EXPECT_EQ(entry_format("CUBBYENT"), EntryFormat::current);  // too short to declare a version
  EXPECT_EQ(entry_format("garbage garbage garbage"), EntryFormat::current);
}

// The key is inside the checksummed header: an entry decodes only under the key it was encoded
// for, so bytes copied or linked to another key's place are refused.
TEST(Entry, DecodesOnlyUnderItsOwnKey) {
  const std::string bytes = encode_entry(kKey, rich_entry());
  ASSERT_TRUE(decode_entry(bytes, kKey).ok());
  for (std::size_t i = 0; i < kKey.bytes.size(); ++i) {
    Key other = kKey;
    other.bytes[i] ^= 0x10;
    auto decoded = decode_entry(bytes, other);
    ASSERT_FALSE(decoded.ok()) << "byte " << i;
    EXPECT_EQ(decoded.error().code, Errc::corrupt);
    EXPECT_NE(decoded.error().message.find("belongs to key " + kKey.hex() + ", not to key " +
                                           other.hex()),
              std::string::npos)
        << decoded.error().message;
  }
  EXPECT_NE(encode_entry(Key{}, rich_entry()), bytes);
}

TEST(Entry, RejectsEveryTruncation) {
  const std::string bytes = encode_entry(kKey, rich_entry());
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    auto decoded = decode_entry(std::string_view(bytes).substr(0, size), kKey);
    ASSERT_FALSE(decoded.ok()) << "prefix of " << size << " bytes decoded";
    EXPECT_EQ(decoded.error().code, Errc::corrupt);
    if (size >= 8) {
      EXPECT_NE(decoded.error().message.find("truncated at byte " + std::to_string(size)),
                std::string::npos)
          << decoded.error().message;
    }
  }
}

TEST(Entry, RejectsAFlippedByteInEachRegion) {
  const std::string bytes = encode_entry(kKey, rich_entry());
  const auto regions = regions_of(bytes);
  ASSERT_EQ(regions.back().end, bytes.size());
  for (const Region& region : regions) {
    ASSERT_LT(region.begin, region.end) << region.name;
    for (std::size_t i = region.begin; i < region.end; ++i) {
      for (const int mask : {0x01, 0x80, 0xff}) {
        std::string damaged = bytes;
        damaged[i] = static_cast<char>(damaged[i] ^ mask);
        auto decoded = decode_entry(damaged, kKey);
        ASSERT_FALSE(decoded.ok()) << region.name << " byte " << i << " mask " << mask;
        EXPECT_EQ(decoded.error().code, region.expected_code) << region.name;
        const std::string& message = decoded.error().message;
        if (region.name == "body_size") {
          EXPECT_TRUE(message.find("truncated") != std::string::npos ||
                      message.find("trailing") != std::string::npos)
              << message;
        } else {
          EXPECT_NE(message.find(region.expected_message), std::string::npos)
              << region.name << ": " << message;
        }
      }
    }
  }
}

TEST(Entry, RejectsTrailingBytes) {
  const std::string bytes = encode_entry(kKey, rich_entry());
  for (const std::string& extra : {std::string(1, '\0'), std::string("x"), std::string(100, 'z')}) {
    auto decoded = decode_entry(bytes + extra, kKey);
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.error().code, Errc::corrupt);
    EXPECT_NE(decoded.error().message.find("trailing"), std::string::npos)
        << decoded.error().message;
  }
}

// Bodies whose checksum is right but whose structure is not: the decoder must check every
// count and length against the bytes that remain.
TEST(Entry, RejectsSealedBodiesWithBadStructure) {
  const std::string tail = str_field("") + u64le(0) + u32le(0) + u64le(0) + u64le(0);
  struct Case {
    std::string name;
    std::string body;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"huge name count", u32le(0xffffffffu) + tail, "cannot fit"},
      {"huge string length", u32le(1) + u32le(0xfffffff0u) + "abcdefgh", "exceeds"},
      {"huge option count", u32le(0) + str_field("") + u64le(0) + u32le(0x7fffffffu) + u64le(0),
       "cannot fit"},
      {"huge payload size",
       u32le(0) + str_field("") + u64le(0) + u32le(0) + u64le(0) + u64le(0xffffffffffffffffull) +
           "abc",
       "payload size"},
      {"short payload size",
       u32le(0) + str_field("") + u64le(0) + u32le(0) + u64le(0) + u64le(1) + "abc",
       "payload size"},
      {"unsorted names",
       u32le(2) + str_field("b") + str_field("x") + str_field("a") + str_field("y") + tail,
       "sorted"},
      {"duplicate names",
       u32le(2) + str_field("a") + str_field("x") + str_field("a") + str_field("y") + tail,
       "sorted"},
      {"empty body", "", "truncated"},
      {"body cut inside compile_us", u32le(0) + str_field("") + "abc", "truncated"},
  };
  for (const Case& c : cases) {
    auto decoded = decode_entry(sealed(c.body), Key{});
    ASSERT_FALSE(decoded.ok()) << c.name;
    EXPECT_EQ(decoded.error().code, Errc::corrupt) << c.name;
    EXPECT_NE(decoded.error().message.find(c.expected), std::string::npos)
        << c.name << ": " << decoded.error().message;
  }
  // The same helpers produce a valid entry when the structure is right.
  auto valid = decode_entry(sealed(u32le(0) + tail), Key{});
  ASSERT_TRUE(valid.ok()) << valid.error().message;
  EXPECT_EQ(*valid, Entry{});
}

// Found by fuzz_decode_entry: reserved header bytes are covered by the checksum, so a sealed
// entry with non-zero reserved bytes must still be rejected, or one entry would have two encodings.
TEST(Entry, RejectsNonZeroReservedBytesEvenWhenSealed) {
  const std::string tail = str_field("") + u64le(0) + u32le(0) + u64le(0) + u64le(0);
  for (std::size_t offset = 13; offset < 16; ++offset) {
    std::string bytes = sealed(u32le(0) + tail);
    bytes[offset] = '\x01';
    bytes = reseal(bytes);
    auto decoded = decode_entry(bytes, Key{});
    ASSERT_FALSE(decoded.ok()) << "reserved byte " << offset;
    EXPECT_NE(decoded.error().message.find("reserved"), std::string::npos)
        << decoded.error().message;
  }
}

TEST(Entry, RandomGarbageNeverDecodes) {
  std::mt19937 random(12345);
  for (int round = 0; round < 3000; ++round) {
    const std::size_t size = round < 2100 ? static_cast<std::size_t>(round) : random() % 70000;
    std::string garbage(size, '\0');
    for (char& c : garbage) c = static_cast<char>(random() & 0xff);
    auto decoded = decode_entry(garbage, kKey);
    ASSERT_FALSE(decoded.ok()) << "garbage of " << size << " bytes decoded";
    EXPECT_EQ(decoded.error().code, Errc::corrupt);
  }
}

// Random bodies behind a valid, sealed header reach the body parser: it must fail cleanly or
// decode to an entry that re-encodes to the same bytes.
TEST(Entry, RandomSealedBodiesNeverCrash) {
  std::mt19937 random(99);
  int decoded_count = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string body(random() % 200, '\0');
    for (char& c : body) c = static_cast<char>(random() % 4 == 0 ? random() & 0xff : random() % 3);
    const std::string bytes = sealed(body);
    auto decoded = decode_entry(bytes, Key{});
    if (decoded.ok()) {
      ++decoded_count;
      EXPECT_EQ(encode_entry(Key{}, *decoded), bytes);
    } else {
      EXPECT_EQ(decoded.error().code, Errc::corrupt);
    }
  }
  RecordProperty("decoded", decoded_count);
}

}  // namespace
}  // namespace cubby
