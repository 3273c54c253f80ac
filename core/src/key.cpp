// STUB: placeholder so the library links while this file is written; replace entirely.
#include "cubby/key.hpp"
namespace cubby {
std::string Key::hex() const { return to_hex(bytes.data(), bytes.size()); }
Result<Key> Key::parse(std::string_view) { return fail(Errc::invalid_argument, "stub"); }
Key derive_key(const KeyInputs&) { return {}; }
std::vector<KeyField> explain_key(const KeyInputs&) { return {}; }
std::vector<std::filesystem::path> include_paths_from_options(const std::vector<std::string>&) { return {}; }
std::vector<HeaderDigest> scan_headers(std::string_view, const std::filesystem::path&, const std::vector<std::filesystem::path>&) { return {}; }
std::array<std::uint8_t, 16> hash128(std::string_view) { return {}; }
std::string to_hex(const std::uint8_t*, std::size_t) { return {}; }
}  // namespace cubby
