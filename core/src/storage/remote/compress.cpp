#include "storage/remote/compress.hpp"

#include <lz4.h>

#include <climits>
#include <cstring>

#include "util/bytes.hpp"

namespace cubby {
namespace {

constexpr std::size_t kHeaderBytes = kCompressedMagic.size() + 8;

}  // namespace

std::string compress_value(std::string_view entry) {
  if (entry.size() > static_cast<std::size_t>(LZ4_MAX_INPUT_SIZE)) return std::string(entry);
  const int bound = LZ4_compressBound(static_cast<int>(entry.size()));
  std::string out(kHeaderBytes + static_cast<std::size_t>(bound), '\0');
  std::memcpy(out.data(), kCompressedMagic.data(), kCompressedMagic.size());
  store_le(out.data() + kCompressedMagic.size(), static_cast<std::uint64_t>(entry.size()));
  const int written = LZ4_compress_default(entry.data(), out.data() + kHeaderBytes,
                                           static_cast<int>(entry.size()), bound);
  // No gain: stored as it is, unless it would then read as compressed.
  if (written <= 0 ||
      (kHeaderBytes + static_cast<std::size_t>(written) >= entry.size() && !is_compressed(entry))) {
    return std::string(entry);
  }
  out.resize(kHeaderBytes + static_cast<std::size_t>(written));
  return out;
}

bool is_compressed(std::string_view value) { return value.starts_with(kCompressedMagic); }

Result<std::string> decompress_value(std::string_view value, std::uint64_t max_size) {
  if (!is_compressed(value) || value.size() < kHeaderBytes) {
    return fail(Errc::corrupt, "compressed remote value is shorter than its header");
  }
  const std::uint64_t size = load_le<std::uint64_t>(value.data() + kCompressedMagic.size());
  if (size > max_size || size > static_cast<std::uint64_t>(INT_MAX)) {
    return fail(Errc::corrupt, "compressed remote value states ", std::to_string(size),
                " bytes, over the entry size limit");
  }
  const std::string_view block = value.substr(kHeaderBytes);
  if (block.size() > static_cast<std::size_t>(INT_MAX)) {
    return fail(Errc::corrupt, "compressed remote value is too large");
  }
  std::string entry(static_cast<std::size_t>(size), '\0');
  const int got = LZ4_decompress_safe(block.data(), entry.data(), static_cast<int>(block.size()),
                                      static_cast<int>(size));
  if (got < 0 || static_cast<std::uint64_t>(got) != size) {
    return fail(Errc::corrupt, "compressed remote value does not decompress to its stated size");
  }
  return entry;
}

}  // namespace cubby
