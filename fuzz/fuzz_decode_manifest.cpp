// libFuzzer target: suite manifests (format/recipe.hpp) come from other machines (the remote tier,
// `cubby import`): the decoder must reject any bytes cleanly (no crash, no sanitizer report, no
// allocation a count or length claims before the bytes are there), and a manifest or recipe that
// decodes must re-encode to the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "format/recipe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto manifest = cubby::decode_manifest(bytes)) {
    if (cubby::encode_manifest(*manifest) != bytes) std::abort();  // decode is exact: no slack
  }
  if (auto recipe = cubby::decode_recipe(bytes)) {
    if (cubby::encode_recipe(*recipe) != bytes) std::abort();
  }
  return 0;
}
