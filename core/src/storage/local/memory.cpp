// STUB: placeholder so the library links while this file is written; replace entirely.
#include "cubby/storage/memory.hpp"
namespace cubby {
MemoryTier::MemoryTier(std::size_t max_entries, std::size_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {}
std::shared_ptr<const Entry> MemoryTier::get(const Key&) { return nullptr; }
void MemoryTier::put(const Key&, std::shared_ptr<const Entry>) {}
void MemoryTier::remove(const Key&) {}
void MemoryTier::clear() {}
std::size_t MemoryTier::size() const { return 0; }
std::size_t MemoryTier::KeyHash::operator()(const Key&) const noexcept { return 0; }
void MemoryTier::evict_locked() {}
}  // namespace cubby
