// XXH3-128, the one content hash of the store (keys, entry checksums, header digests).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace cubby {

// XXH3-128 of `bytes` (used for checksums and content hashes).
std::array<std::uint8_t, 16> hash128(std::string_view bytes);

}  // namespace cubby
