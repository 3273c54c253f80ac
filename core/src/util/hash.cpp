#include "util/hash.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace cubby {

std::array<std::uint8_t, 16> hash128(std::string_view bytes) {
  const XXH128_hash_t hash = XXH3_128bits(bytes.data(), bytes.size());
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  std::array<std::uint8_t, 16> out{};
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = canonical.digest[i];
  }
  return out;
}

}  // namespace cubby
