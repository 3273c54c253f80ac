// The AVX2 path of hash128 (util/hash.hpp), compiled with -mavx2 (core/CMakeLists.txt). Only XXH3
// (static functions, XXH_INLINE_ALL) and this one function live here: no inline function with
// external linkage is emitted, so the linker can never give AVX2 code to callers on CPUs without
// it. hash.cpp calls it only after checking the CPU.
#include <cstddef>
#include <cstdint>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "util/hash.hpp"

namespace cubby {

void hash128_avx2(const char* first, std::size_t first_size, const char* second,
                  std::size_t second_size, std::uint8_t* out) {
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_128bits_reset(&state);
  XXH3_128bits_update(&state, first, first_size);
  XXH3_128bits_update(&state, second, second_size);
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(&state));
  for (std::size_t i = 0; i < sizeof canonical.digest; ++i) out[i] = canonical.digest[i];
}

}  // namespace cubby
