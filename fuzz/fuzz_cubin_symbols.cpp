// libFuzzer target: the CUBIN (ELF64) symbol reader must reject any bytes cleanly (no crash, no
// out-of-bounds read), and lookups on what it returns must be safe.
#include <cstdint>
#include <string_view>

#include "cubby/cubin.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto symbols = cubby::read_cubin_symbols(bytes);
  if (symbols) {
    (void)symbols->has_kernel("_Z1kPf");
    (void)symbols->has_variable("table");
  }
  (void)cubby::payload_has_symbol(bytes, "ptx", "_Z1kPf");
  return 0;
}
