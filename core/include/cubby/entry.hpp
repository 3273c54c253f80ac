// The entry: what the store keeps for one key (the same bytes on disk and in a remote tier). The
// values, Entry and PayloadKind, are declared in cubby/types.hpp; this header is their encoding.
//
// Grammar (all integers little-endian; `str` is u32 length + bytes):
//
//   entry     := header body
//   header    := magic:"CUBBYENT" (8 bytes) version:u32 kind:u8 reserved:u8[3]
//                checksum:u8[16] body_size:u64 key:u8[16]
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
//   key       := Key::bytes of the key the entry is stored under. It binds the entry to its key:
//                bytes copied or linked to another key's file, archive member or remote value
//                are refused, never served for that key.
//
// Decoding rejects (Errc::corrupt) bad magic, an unknown kind, a checksum mismatch, any
// truncation, trailing bytes and a key other than the one asked for. An entry of another format
// version (written by an older or newer cubby, which derives other keys) is Errc::not_found: a
// miss for this build, not damage. A changed layout must bump kEntryFormatVersion and the golden
// files in tests/golden/ (version 1 had no key; its golden files stay, to show it is a miss).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cubby/error.hpp"
#include "cubby/export.h"
#include "cubby/key.hpp"
#include "cubby/types.hpp"

namespace cubby {

inline constexpr std::uint32_t kEntryFormatVersion = 2;
inline constexpr std::size_t kEntryHeaderSize = 8 + 4 + 4 + 16 + 8 + 16;

// "cubin", "ptx", "ltoir", "blob".
CUBBY_API const char* payload_kind_name(PayloadKind kind) noexcept;

// The bytes of `entry` stored under `key`, per the grammar above. Pure.
CUBBY_API std::string encode_entry(const Key& key, const Entry& entry);

// Decodes and checks the entry stored under `key`: the one check every reader (disk, remote,
// blob, import, verify, show) relies on. Errc::corrupt with a message naming the defect (a key
// other than `key` included); Errc::not_found for an entry of another format version. Pure.
CUBBY_API Result<Entry> decode_entry(std::string_view bytes, const Key& key);

// How the format version `bytes` declare compares with kEntryFormatVersion: `older` or `newer`
// when they start with the magic and another version (what decode_entry reports as
// Errc::not_found); `current` otherwise, also for bytes that are no entry at all (decode_entry
// says what is wrong with them). Pure.
enum class EntryFormat : std::uint8_t { current, older, newer };
CUBBY_API EntryFormat entry_format(std::string_view bytes) noexcept;

}  // namespace cubby
