// libFuzzer target: the entry decoder and verifier must reject any bytes cleanly (no crash, no
// sanitizer report), and an entry that decodes must re-encode to the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cubby/entry.hpp"
#include "cubby/storage/verify.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto entry = cubby::decode_entry(bytes);
  if (entry) {
    if (cubby::encode_entry(*entry) != bytes) std::abort();  // decode is exact: no slack
    (void)cubby::verify_entry_symbols(*entry);
  }
  (void)cubby::is_newer_format(bytes);
  return 0;
}
