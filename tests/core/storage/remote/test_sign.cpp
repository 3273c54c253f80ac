// Signed remote entries: HMAC-SHA256 envelopes (core/src/storage/remote/sign.cpp).
#include <gtest/gtest.h>

#include "storage/remote/sign.hpp"
#include "util/bytes.hpp"

namespace cubby {
namespace {

using namespace std::string_literals;

Key key_of(std::uint8_t fill) {
  Key key;
  key.bytes.fill(fill);
  return key;
}

TEST(Sign, HmacMatchesRfc4231TestCase2) {
  // RFC 4231, test case 2: key "Jefe", data "what do ya want for nothing?".
  const auto mac = hmac_sha256("Jefe", {"what do ya want ", "for nothing?"});
  EXPECT_EQ(to_hex(mac.data(), mac.size()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Sign, SealedEntryOpensWithTheSameSecretAndKey) {
  const std::string entry = "entry bytes\0with a zero"s;
  const std::string sealed = seal_signed("s3cret", key_of(1), entry);
  EXPECT_TRUE(is_signed(sealed));
  EXPECT_EQ(sealed.size(), kSignatureMagic.size() + kSignatureBytes + entry.size());
  auto opened = open_signed("s3cret", key_of(1), sealed);
  ASSERT_TRUE(opened) << opened.error().message;
  EXPECT_EQ(*opened, entry);
}

TEST(Sign, WrongSecretWrongKeyTamperingTruncationAndUnsignedAreRejected) {
  const std::string entry = "the entry";
  const std::string sealed = seal_signed("s3cret", key_of(1), entry);
  auto wrong_secret = open_signed("other", key_of(1), sealed);
  ASSERT_FALSE(wrong_secret);
  EXPECT_NE(wrong_secret.error().message.find("bad signature"), std::string::npos);
  EXPECT_FALSE(open_signed("s3cret", key_of(2), sealed));  // replayed under another key
  std::string tampered = sealed;
  tampered.back() = static_cast<char>(tampered.back() ^ 1);
  EXPECT_FALSE(open_signed("s3cret", key_of(1), tampered));
  EXPECT_FALSE(open_signed("s3cret", key_of(1), sealed.substr(0, sealed.size() - 1)));
  EXPECT_FALSE(open_signed("s3cret", key_of(1), sealed.substr(0, 20)));
  auto unsigned_entry = open_signed("s3cret", key_of(1), entry);
  ASSERT_FALSE(unsigned_entry);
  EXPECT_NE(unsigned_entry.error().message.find("unsigned"), std::string::npos);
  EXPECT_EQ(unsigned_entry.error().code, Errc::corrupt);
}

}  // namespace
}  // namespace cubby
