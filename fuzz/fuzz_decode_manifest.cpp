// libFuzzer target: suite manifests (format/recipe.hpp) come from other machines (the remote tier,
// `cubby import`): the decoder must reject any bytes cleanly (no crash, no sanitizer report, no
// allocation a count or length claims before the bytes are there), and a manifest of the current
// format or a recipe that decodes must re-encode to the same bytes (an older format: to the same
// recipes).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "format/recipe.hpp"
#include "util/bytes.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto manifest = cubby::decode_manifest(bytes)) {
    const std::string again = cubby::encode_manifest(*manifest);
    // The current format decodes exactly (no slack); an older one is written again as the
    // current one, holding the same suite and recipes.
    if (bytes.size() >= 12 &&
        cubby::load_le<std::uint32_t>(bytes, 8) == cubby::kManifestFormatVersion) {
      if (again != bytes) std::abort();
    } else {
      auto decoded = cubby::decode_manifest(again);
      if (!decoded || decoded->suite != manifest->suite || decoded->recipes != manifest->recipes) {
        std::abort();
      }
    }
  }
  if (auto recipe = cubby::decode_recipe(bytes)) {
    if (cubby::encode_recipe(*recipe) != bytes) std::abort();
  }
  return 0;
}
