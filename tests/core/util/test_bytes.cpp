// bytes.hpp: little-endian integers and hex text, the one copy every format uses.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "util/bytes.hpp"

namespace cubby {
namespace {

using namespace std::string_literals;

TEST(Bytes, PutLeWritesLeastSignificantByteFirstWhateverTheHost) {
  std::string out;
  put_le(out, std::uint8_t{0xab});
  put_le(out, std::uint16_t{0x0102});
  put_le(out, std::uint32_t{0x03040506});
  put_le(out, std::uint64_t{0x0708090a0b0c0d0e});
  EXPECT_EQ(out, "\xab\x02\x01\x06\x05\x04\x03\x0e\x0d\x0c\x0b\x0a\x09\x08\x07"s);
}

TEST(Bytes, SignedValuesAreTwosComplement) {
  std::string out;
  put_le(out, std::int64_t{-5});
  put_le(out, std::int32_t{-2});
  put_le(out, std::int16_t{std::numeric_limits<std::int16_t>::min()});
  put_le(out, std::int8_t{-1});
  EXPECT_EQ(out, "\xfb\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff\x00\x80\xff"s);
  EXPECT_EQ(load_le<std::int64_t>(out, 0), -5);
  EXPECT_EQ(load_le<std::int32_t>(out, 8), -2);
  EXPECT_EQ(load_le<std::int16_t>(out, 12), std::numeric_limits<std::int16_t>::min());
  EXPECT_EQ(load_le<std::int8_t>(out, 14), -1);
}

TEST(Bytes, LoadLeReadsAtAnOffsetAndRoundTripsExtremes) {
  const std::string bytes = "xy\x0e\x0d\x0c\x0b\x0a\x09\x08\x07"s;
  EXPECT_EQ(load_le<std::uint64_t>(bytes, 2), 0x0708090a0b0c0d0eu);
  EXPECT_EQ(load_le<std::uint32_t>(bytes, 2), 0x0b0c0d0eu);
  EXPECT_EQ(load_le<std::uint16_t>(bytes.data() + 8), 0x0708u);
  EXPECT_EQ(load_le<std::uint8_t>(bytes, 9), 0x07u);

  char buffer[8];
  for (const std::uint64_t value : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1} << 63,
                                    std::numeric_limits<std::uint64_t>::max()}) {
    store_le(buffer, value);
    EXPECT_EQ(load_le<std::uint64_t>(buffer), value);
  }
  store_le(buffer, std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(load_le<std::int64_t>(buffer), std::numeric_limits<std::int64_t>::min());
}

TEST(Bytes, ToHexIsLowercaseTwoDigitsPerByte) {
  EXPECT_EQ(to_hex(""), "");
  EXPECT_EQ(to_hex("\x00\x01\x7f\x80\xab\xff"s), "00017f80abff");
  const std::uint8_t raw[] = {0xde, 0xad, 0xbe, 0xef};
  EXPECT_EQ(to_hex(raw, sizeof raw), "deadbeef");
  std::string escaped = "\\x";
  append_hex(escaped, 0x1f);
  EXPECT_EQ(escaped, "\\x1f");
}

TEST(Bytes, FromHexAcceptsEitherCaseAndRoundTrips) {
  std::uint8_t out[4] = {};
  EXPECT_EQ(from_hex("DeadBEEF", out), std::string_view::npos);
  EXPECT_EQ(to_hex(out, sizeof out), "deadbeef");
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  std::uint8_t back[256] = {};
  EXPECT_EQ(from_hex(to_hex(all), back), std::string_view::npos);
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(back), sizeof back), all);
}

TEST(Bytes, FromHexReportsTheFirstCharacterThatIsNotAHexDigit) {
  std::uint8_t out[3] = {};
  EXPECT_EQ(from_hex("g00000", out), 0u);
  EXPECT_EQ(from_hex("0g0000", out), 1u);
  EXPECT_EQ(from_hex("00zz00", out), 2u);
  EXPECT_EQ(from_hex("0000 0", out), 4u);
  EXPECT_EQ(from_hex("00000-", out), 5u);
  for (const char c : std::string_view("/:@G`g \x80", 8)) {
    EXPECT_EQ(hex_value(c), -1) << static_cast<int>(c);
  }
  EXPECT_EQ(hex_value('0'), 0);
  EXPECT_EQ(hex_value('9'), 9);
  EXPECT_EQ(hex_value('a'), 10);
  EXPECT_EQ(hex_value('F'), 15);
}

TEST(Bytes, IsLowerHexRejectsUppercaseAndOtherCharacters) {
  EXPECT_TRUE(is_lower_hex(""));
  EXPECT_TRUE(is_lower_hex("0123456789abcdef"));
  EXPECT_FALSE(is_lower_hex("0123456789ABCDEF"));
  EXPECT_FALSE(is_lower_hex("abcg"));
  EXPECT_FALSE(is_lower_hex("ab cd"));
  EXPECT_FALSE(is_lower_hex(std::string_view("ab\0d", 4)));
}

}  // namespace
}  // namespace cubby
