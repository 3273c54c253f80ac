#include "util/hash.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace cubby {
namespace {

// Whether hash128 takes the AVX2 path: built for it (CUBBY_HASH_AVX2) and the CPU has it.
bool use_avx2() {
#if defined(CUBBY_HASH_AVX2)
  static const bool has = __builtin_cpu_supports("avx2") != 0;
  return has;
#else
  return false;
#endif
}

}  // namespace

std::array<std::uint8_t, 16> hash128_portable(std::string_view first, std::string_view second) {
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_128bits_reset(&state);
  XXH3_128bits_update(&state, first.data(), first.size());
  XXH3_128bits_update(&state, second.data(), second.size());
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(&state));
  std::array<std::uint8_t, 16> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = canonical.digest[i];
  return out;
}

std::array<std::uint8_t, 16> hash128(std::string_view first, std::string_view second) {
  if (!use_avx2()) return hash128_portable(first, second);
  std::array<std::uint8_t, 16> out{};
  hash128_avx2(first.data(), first.size(), second.data(), second.size(), out.data());
  return out;
}

std::array<std::uint8_t, 16> hash128(std::string_view bytes) { return hash128(bytes, {}); }

}  // namespace cubby
