// STUB: placeholder so the library links while this file is written; replace entirely.
#include "cubby/key.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>
namespace cubby {
std::string Key::hex() const { return to_hex(bytes.data(), bytes.size()); }
Result<Key> Key::parse(std::string_view) { return fail(Errc::invalid_argument, "stub"); }
Key derive_key(const KeyInputs&) { return {}; }
std::vector<KeyField> explain_key(const KeyInputs&) { return {}; }
std::vector<std::filesystem::path> include_paths_from_options(const std::vector<std::string>&) { return {}; }
std::vector<HeaderDigest> scan_headers(std::string_view, const std::filesystem::path&, const std::vector<std::filesystem::path>&) { return {}; }
std::array<std::uint8_t, 16> hash128(std::string_view bytes) {
  const XXH128_hash_t hash = XXH3_128bits(bytes.data(), bytes.size());
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  std::array<std::uint8_t, 16> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = canonical.digest[i];
  return out;
}
std::string to_hex(const std::uint8_t* bytes, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (std::size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}
}  // namespace cubby
