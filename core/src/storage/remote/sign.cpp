#include "storage/remote/sign.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <memory>

namespace cubby {
namespace {

constexpr std::string_view kDomain{"cubby remote entry\0", 19};

struct MacDeleter {
  void operator()(EVP_MAC* mac) const { EVP_MAC_free(mac); }
  void operator()(EVP_MAC_CTX* ctx) const { EVP_MAC_CTX_free(ctx); }
};

std::string_view key_bytes(const Key& key) {
  return {reinterpret_cast<const char*>(key.bytes.data()), key.bytes.size()};
}

}  // namespace

std::array<std::uint8_t, kSignatureBytes> hmac_sha256(
    std::string_view secret, std::initializer_list<std::string_view> parts) {
  std::array<std::uint8_t, kSignatureBytes> out{};
  // Fetched once: EVP_MAC_fetch is thread-safe and the object is immutable afterwards.
  static const std::unique_ptr<EVP_MAC, MacDeleter> mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
  if (!mac) return out;  // libcrypto without HMAC: an all-zero MAC, which no envelope carries
  std::unique_ptr<EVP_MAC_CTX, MacDeleter> ctx(EVP_MAC_CTX_new(mac.get()));
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_END};
  std::size_t length = 0;
  bool ok = ctx && EVP_MAC_init(ctx.get(), reinterpret_cast<const unsigned char*>(secret.data()),
                                secret.size(), params) == 1;
  for (std::string_view part : parts) {
    ok = ok && EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(part.data()),
                              part.size()) == 1;
  }
  ok = ok && EVP_MAC_final(ctx.get(), out.data(), &length, out.size()) == 1;
  if (!ok || length != out.size()) out.fill(0);
  return out;
}

std::string seal_signed(std::string_view secret, const Key& key, std::string_view entry) {
  const auto mac = hmac_sha256(secret, {kDomain, key_bytes(key), entry});
  std::string out;
  out.reserve(kSignatureMagic.size() + mac.size() + entry.size());
  out.append(kSignatureMagic);
  out.append(reinterpret_cast<const char*>(mac.data()), mac.size());
  out.append(entry);
  return out;
}

bool is_signed(std::string_view value) { return value.starts_with(kSignatureMagic); }

Result<std::string_view> open_signed(std::string_view secret, const Key& key,
                                     std::string_view value) {
  if (!is_signed(value)) {
    return fail(Errc::corrupt,
                "the remote entry is unsigned; entries must be written by cubby with the same "
                "CUBBY_REMOTE_SECRET");
  }
  if (value.size() < kSignatureMagic.size() + kSignatureBytes) {
    return fail(Errc::corrupt, "bad signature: the remote entry is truncated");
  }
  const std::string_view stored = value.substr(kSignatureMagic.size(), kSignatureBytes);
  const std::string_view entry = value.substr(kSignatureMagic.size() + kSignatureBytes);
  const auto mac = hmac_sha256(secret, {kDomain, key_bytes(key), entry});
  bool zero = true;
  for (std::uint8_t byte : mac) zero = zero && byte == 0;
  if (zero || CRYPTO_memcmp(mac.data(), stored.data(), mac.size()) != 0) {
    return fail(Errc::corrupt,
                "bad signature: the remote entry was not signed with this CUBBY_REMOTE_SECRET "
                "for this key (tampered, truncated, or another secret)");
  }
  return entry;
}

}  // namespace cubby
