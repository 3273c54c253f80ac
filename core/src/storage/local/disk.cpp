// STUB: placeholder so the library links while this file is written; replace entirely.
#include "cubby/storage/disk.hpp"
namespace cubby {
DiskTier::DiskTier(std::filesystem::path root) : root_(std::move(root)) {}
Result<std::optional<std::string>> DiskTier::get(const Key&) { return std::optional<std::string>{}; }
Result<void> DiskTier::put(const Key&, std::string_view) { return {}; }
Result<void> DiskTier::remove(const Key&) { return {}; }
std::filesystem::path DiskTier::path_of(const Key&) const { return root_; }
Result<void> DiskTier::list(const std::function<void(const DiskEntryInfo&)>&) const { return {}; }
Result<std::uint64_t> DiskTier::clear() { return std::uint64_t{0}; }
}  // namespace cubby
