// Compressed remote values: encoded entries travel to and from the remote tier LZ4-compressed
// (CUBINs shrink ~8x: less network, less Redis memory; decompression runs at several GB/s).
//
// Value grammar (what a signed envelope, sign.hpp, wraps when a secret is set):
//   value      := compressed | entry
//   compressed := "CBYLZ401" u64le(entry size) lz4-block
//   entry      := an encoded entry (entry.hpp; starts with its own magic "CUBBYENT")
// A value that does not start with "CBYLZ401" is an entry stored uncompressed (writers with
// CUBBY_REMOTE_COMPRESS=0, or entries that do not shrink). The remote tier decompresses; the
// orchestrator then decodes and verifies the entry as usual.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cubby/error.hpp"

namespace cubby {

inline constexpr std::string_view kCompressedMagic = "CBYLZ401";

// `entry` compressed; `entry` itself (copied) when compressing would not make it smaller and it
// does not start with the compressed magic (so every value reads back as what was written).
std::string compress_value(std::string_view entry);

// True if `value` starts with the compressed magic.
bool is_compressed(std::string_view value);

// The entry inside a compressed `value`. Errc::corrupt when the header is short, the stated
// size is over `max_size` (checked before anything is allocated) or the block does not
// decompress to exactly the stated size.
Result<std::string> decompress_value(std::string_view value, std::uint64_t max_size);

}  // namespace cubby
