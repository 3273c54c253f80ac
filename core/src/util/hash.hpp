// XXH3-128, the one content hash of the store (keys, entry checksums, header digests).
//
// Computed with the widest vector unit of the CPU it runs on: AVX2 when the CPU has it (a file of
// its own compiled for AVX2, entered only after a run-time check; x86-64 with GCC or Clang), else
// XXH3's portable SSE2/scalar code. XXH3's value does not depend on the path, so stores, keys and
// golden files are the same on every CPU. A warm hit checksums its whole entry: 350 KB of CUBIN
// take ~3x less time with AVX2.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cubby {

// XXH3-128 (canonical bytes) of `bytes`.
std::array<std::uint8_t, 16> hash128(std::string_view bytes);

// XXH3-128 (canonical bytes) of `first` followed by `second`, as one stream.
std::array<std::uint8_t, 16> hash128(std::string_view first, std::string_view second);

// hash128 of `first` then `second` on the portable path whatever the CPU (tests compare it with
// the dispatched one).
std::array<std::uint8_t, 16> hash128_portable(std::string_view first, std::string_view second);

// The AVX2 path (util/hash_avx2.cpp); call only when the CPU has AVX2. Writes 16 canonical bytes.
void hash128_avx2(const char* first, std::size_t first_size, const char* second,
                  std::size_t second_size, std::uint8_t* out);

}  // namespace cubby
