// libFuzzer target: the entry decoder and verifier must reject any bytes cleanly (no crash, no
// sanitizer report), an entry that decodes must re-encode to the same bytes, and it decodes
// under the key it carries only.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "cubby/entry.hpp"
#include "storage/local/verify.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The key the bytes carry (the header's last 16 bytes, see entry.hpp), when they are that long.
  cubby::Key key;
  if (size >= cubby::kEntryHeaderSize) {
    std::memcpy(key.bytes.data(), data + cubby::kEntryHeaderSize - key.bytes.size(),
                key.bytes.size());
  }
  auto entry = cubby::decode_entry(bytes, key);
  if (entry) {
    if (cubby::encode_entry(key, *entry) != bytes) std::abort();  // decode is exact: no slack
    cubby::Key other = key;
    other.bytes[0] ^= 1;
    if (cubby::decode_entry(bytes, other)) std::abort();  // bound to its key
    (void)cubby::verify_entry_symbols(*entry);
  }
  // "Another format version" (a miss, not damage) exactly for bytes that declare one.
  const bool other_format = cubby::entry_format(bytes) != cubby::EntryFormat::current;
  if (other_format != (!entry && entry.error().code == cubby::Errc::not_found)) std::abort();
  return 0;
}
