// The envelope (core/src/storage/remote/envelope.cpp) over an in-memory backend: what is stored is
// the compressed, signed entry; what is read is opened; rejections and the size limit are counted.
#include <gtest/gtest.h>

#include "fake_backend.hpp"
#include "storage/remote/compress.hpp"
#include "storage/remote/envelope.hpp"
#include "storage/remote/sign.hpp"

namespace cubby {
namespace {

using testing::fake_key;
using testing::FakeBackend;

// An entry-like value that compresses well.
std::string compressible() {
  std::string out;
  for (int i = 0; i < 2000; ++i) out += "CUBBYENT .text._Z5scaleIfEvPT_ " + std::to_string(i % 7);
  return out;
}

EnvelopeOptions options(std::string secret, bool compress = true,
                        std::uint64_t max_entry = 64ull << 20) {
  EnvelopeOptions out;
  out.secret = std::move(secret);
  out.compress = compress;
  out.max_entry = max_entry;
  return out;
}

struct Enveloped {
  explicit Enveloped(EnvelopeOptions options = {})
      : state(std::make_shared<FakeBackend::State>()),
        backend(state),
        envelope(
            backend,
            [&] {
              options.location = "fake://store";
              return options;
            }(),
            counted) {}
  std::string& stored(const Key& key) { return state->values.at(key.hex()); }
  std::shared_ptr<FakeBackend::State> state;
  FakeBackend backend;
  AtomicStats counted;
  Envelope envelope;
};

TEST(Envelope, StoresCompressedAndSignedAndReadsBack) {
  Enveloped e(options("alpha"));
  const std::string entry = compressible();
  ASSERT_TRUE(e.envelope.put(fake_key(1), entry));
  const std::string stored = e.stored(fake_key(1));
  EXPECT_TRUE(is_signed(stored));
  EXPECT_TRUE(is_compressed(stored.substr(kSignatureMagic.size() + kSignatureBytes)));
  EXPECT_LT(stored.size(), entry.size());
  auto back = e.envelope.get(fake_key(1));
  ASSERT_TRUE(back && back->has_value()) << (back ? "" : back.error().message);
  EXPECT_EQ(**back, entry);
  auto missing = e.envelope.get(fake_key(2));
  ASSERT_TRUE(missing);
  EXPECT_FALSE(missing->has_value());
  EXPECT_EQ(e.counted.snapshot().remote_rejected, 0u);
}

TEST(Envelope, PlainWhenCompressionIsOffAndThereIsNoSecret) {
  Enveloped e(options("", false));
  ASSERT_TRUE(e.envelope.put(fake_key(1), "entry"));
  EXPECT_EQ(e.stored(fake_key(1)), "entry");
  auto back = e.envelope.get(fake_key(1));
  ASSERT_TRUE(back && back->has_value());
  EXPECT_EQ(**back, "entry");
}

TEST(Envelope, UnsignedOrBadlySignedValuesAreRejectedWithASecretAndWarnedOnce) {
  Enveloped e(options("alpha"));
  e.state->values[fake_key(1).hex()] = "unsigned";
  e.state->values[fake_key(2).hex()] = seal_signed("beta", fake_key(2), "other secret");
  e.state->values[fake_key(3).hex()] = seal_signed("alpha", fake_key(4), "other key");
  ::testing::internal::CaptureStderr();
  for (std::uint8_t i = 1; i <= 3; ++i) {
    auto got = e.envelope.get(fake_key(i));
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code, Errc::corrupt);  // never opens the breaker above
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(e.counted.snapshot().remote_rejected, 3u);
  EXPECT_NE(err.find("rejected remote entry"), std::string::npos) << err;
  EXPECT_EQ(err.find("rejected remote entry"), err.rfind("rejected remote entry"));  // once
}

TEST(Envelope, SignedValuesAreOpenedWithoutASecret) {
  Enveloped e;
  const std::string entry = compressible();
  e.state->values[fake_key(1).hex()] = seal_signed("alpha", fake_key(1), compress_value(entry));
  e.state->values[fake_key(2).hex()] = seal_signed("alpha", fake_key(2), "plain entry");
  auto got = e.envelope.get(fake_key(1));
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ(**got, entry);
  got = e.envelope.get(fake_key(2));
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ(**got, "plain entry");
}

TEST(Envelope, CorruptOrOversizedCompressedValuesAreRejected) {
  Enveloped e(options("", true, 1000));
  const std::string value = compress_value(compressible());
  e.state->values[fake_key(1).hex()] = value.substr(0, value.size() / 2);
  e.state->values[fake_key(2).hex()] = value;  // decompresses past max_entry
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(e.envelope.get(fake_key(1)));
  EXPECT_FALSE(e.envelope.get(fake_key(2)));
  (void)::testing::internal::GetCapturedStderr();
  EXPECT_EQ(e.counted.snapshot().remote_rejected, 2u);
}

TEST(Envelope, EntriesOverTheLimitAreNotSentAndCounted) {
  Enveloped e(options("", true, 8));
  auto put = e.envelope.put(fake_key(1), "123456789");
  ASSERT_FALSE(put);
  EXPECT_NE(put.error().message.find("CUBBY_REMOTE_MAX_ENTRY"), std::string::npos);
  EXPECT_EQ(e.state->puts, 0);
  EXPECT_EQ(e.counted.snapshot().remote_writes_dropped, 1u);
  EXPECT_TRUE(e.envelope.put(fake_key(2), "12345678"));
  EXPECT_EQ(Envelope::max_value(8), 8 + kSignatureMagic.size() + kSignatureBytes);
  ASSERT_TRUE(e.envelope.remove(fake_key(2)));
  EXPECT_EQ(e.state->removes, 1);
}

}  // namespace
}  // namespace cubby
