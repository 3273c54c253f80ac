// Tests of util/hash: the dispatched XXH3-128 (AVX2 where the CPU has it) gives the portable
// path's value for every length and split, and known values (so keys and checksums never change).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "util/bytes.hpp"
#include "util/hash.hpp"

namespace {

std::string random_bytes(std::size_t size, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::string bytes(size, '\0');
  for (char& byte : bytes) byte = static_cast<char>(random() & 0xFF);
  return bytes;
}

std::string hex(const std::array<std::uint8_t, 16>& digest) {
  return cubby::to_hex(digest.data(), digest.size());
}

TEST(Hash128, TheDispatchedPathEqualsThePortableOneForEveryLengthAndSplit) {
  // Lengths around XXH3's internal boundaries (16, 128, 240, stripes of 64, blocks of 1024) and a
  // CUBIN's size; splits at the start, inside and at the end.
  for (const std::size_t size :
       {0, 1, 15, 16, 17, 128, 129, 240, 241, 1023, 1024, 1025, 4096, 65537, 347528}) {
    const std::string bytes = random_bytes(size, static_cast<std::uint32_t>(size));
    for (const std::size_t split : {std::size_t{0}, size / 3, size}) {
      const std::string_view first(bytes.data(), split);
      const std::string_view second(bytes.data() + split, size - split);
      EXPECT_EQ(hex(cubby::hash128(first, second)), hex(cubby::hash128_portable(first, second)))
          << size << " split at " << split;
      EXPECT_EQ(hex(cubby::hash128(first, second)), hex(cubby::hash128(bytes))) << size;
    }
  }
}

TEST(Hash128, KnownValues) {
  // XXH3-128 (canonical) of "" and of "cubby", as xxhash's XXH3_128bits gives them.
  EXPECT_EQ(hex(cubby::hash128("")), "99aa06d3014798d86001c324468d497f");
  EXPECT_EQ(hex(cubby::hash128("cubby")), "4c978ec327c6f6f00ebd1d408179fd83");
  EXPECT_EQ(hex(cubby::hash128("cu", "bby")), "4c978ec327c6f6f00ebd1d408179fd83");
}

}  // namespace
