// The entry: what the store keeps for one key (the same bytes on disk and in a remote tier).
//
// Grammar (all integers little-endian; `str` is u32 length + bytes):
//
//   entry     := header body
//   header    := magic:"CUBBYENT" (8 bytes) version:u32 kind:u8 reserved:u8[3]
//                checksum:u8[16] body_size:u64
//   body      := names log compile_us:u64 options created_ms:i64 payload
//   names     := count:u32 (expression:str lowered:str){count}   -- sorted by expression
//   log       := str
//   options   := count:u32 option:str{count}                      -- in the order given
//   payload   := size:u64 bytes{size}
//
//   reserved  := 0 0 0 (decoding rejects anything else, so every entry has one encoding)
//   version   := kEntryFormatVersion
//   kind      := 1 (cubin) | 2 (ptx) | 3 (ltoir) | 4 (blob: an opaque payload, see blob.hpp)
//   checksum  := XXH3-128 over the header with the checksum field zeroed, then the body
//   body_size := the number of bytes after the header; the entry ends exactly there
//
// Decoding rejects (Errc::corrupt) bad magic, an unknown version or kind, a checksum mismatch,
// any truncation and trailing bytes. A changed layout must bump kEntryFormatVersion and the
// golden files in tests/golden/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/error.hpp"

namespace cubby {

inline constexpr std::uint32_t kEntryFormatVersion = 1;
inline constexpr std::size_t kEntryHeaderSize = 8 + 4 + 4 + 16 + 8;

enum class PayloadKind : std::uint8_t { cubin = 1, ptx = 2, ltoir = 3, blob = 4 };

// "cubin", "ptx", "ltoir", "blob".
const char* payload_kind_name(PayloadKind kind) noexcept;

struct Entry {
  PayloadKind kind = PayloadKind::cubin;
  std::map<std::string, std::string> lowered_names;  // name expression -> mangled name (NVRTC's)
  std::string log;                                   // NVRTC's compile log (warnings)
  std::uint64_t compile_us = 0;                      // what the original compile cost
  std::vector<std::string> options;                  // options the payload was compiled with
  std::int64_t created_ms = 0;                       // Unix time of the compile, milliseconds
  std::string payload;                               // CUBIN / PTX / LTO-IR bytes

  friend bool operator==(const Entry&, const Entry&) = default;
};

// The entry's bytes, per the grammar above. Pure.
std::string encode_entry(const Entry& entry);

// Decodes and checks an entry; Errc::corrupt with a message naming the defect otherwise. Pure.
Result<Entry> decode_entry(std::string_view bytes);

}  // namespace cubby
