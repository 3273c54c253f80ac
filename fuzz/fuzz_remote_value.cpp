// libFuzzer target: a remote value is whatever anyone who can write the Redis stored. Opening
// its envelope and decompressing it must reject any bytes cleanly (no crash, no sanitizer
// report, no allocation past the limit), and what decompresses must survive a round trip.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cubby/key.hpp"
#include "storage/remote/compress.hpp"
#include "storage/remote/sign.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  constexpr std::uint64_t kLimit = 1 << 20;
  (void)cubby::open_signed("secret", cubby::Key{}, bytes);
  if (cubby::is_compressed(bytes)) {
    auto entry = cubby::decompress_value(bytes, kLimit);
    if (entry) {
      auto again = cubby::decompress_value(cubby::compress_value(*entry), kLimit);
      if (cubby::is_compressed(cubby::compress_value(*entry)) && (!again || *again != *entry)) {
        std::abort();
      }
    }
  } else {
    const std::string value = cubby::compress_value(bytes);
    if (cubby::is_compressed(value)) {
      auto back = cubby::decompress_value(value, size);
      if (!back || *back != bytes) std::abort();
    } else if (value != bytes) {
      std::abort();  // not compressed: stored as it is
    }
  }
  return 0;
}
