// Signed remote entries: an HMAC-SHA256 envelope around an encoded entry (OpenSSL libcrypto).
//
// Envelope grammar (all of it is what the remote stores under a key):
//   envelope := "CBYSIG01" mac entry
//   mac      := 32 bytes, HMAC-SHA256(secret, "cubby remote entry\0" key-bytes entry)
// The MAC covers the whole entry and the 16 key bytes, so a signed entry cannot be replayed under
// another key. Whoever lacks the secret cannot produce a value that `open_signed` accepts.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "cubby/error.hpp"
#include "cubby/key.hpp"

namespace cubby {

inline constexpr std::string_view kSignatureMagic = "CBYSIG01";
inline constexpr std::size_t kSignatureBytes = 32;

// HMAC-SHA256 of the concatenation of `parts` under `secret`.
std::array<std::uint8_t, kSignatureBytes> hmac_sha256(
    std::string_view secret, std::initializer_list<std::string_view> parts);

// The envelope of `entry` stored under `key`, signed with `secret` (non-empty).
std::string seal_signed(std::string_view secret, const Key& key, std::string_view entry);

// True if `value` starts with the envelope magic.
bool is_signed(std::string_view value);

// The entry inside `value` when it is an envelope for `key` whose MAC verifies under `secret`;
// Errc::corrupt saying "unsigned" (no envelope) or "bad signature" (wrong secret, wrong key,
// tampered or truncated bytes). Constant-time MAC comparison.
Result<std::string_view> open_signed(std::string_view secret, const Key& key,
                                     std::string_view value);

}  // namespace cubby
