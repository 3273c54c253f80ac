// Memory tier: a mutex-guarded LRU of decoded entries, bounded by count and payload bytes.
#include "storage/local/memory.hpp"

#include <cstring>

namespace cubby {

MemoryTier::MemoryTier(std::size_t max_entries, std::size_t max_bytes)
    : max_entries_(max_entries), max_bytes_(max_bytes) {}

std::size_t MemoryTier::KeyHash::operator()(const Key& key) const noexcept {
  // Keys are already uniform hashes: their first bytes are a good hash.
  std::size_t value = 0;
  std::memcpy(&value, key.bytes.data(), sizeof value);
  return value;
}

std::shared_ptr<const Entry> MemoryTier::get(const Key& key) {
  const std::lock_guard lock(mutex_);
  const auto found = slots_.find(key);
  if (found == slots_.end()) return nullptr;
  order_.splice(order_.begin(), order_, found->second.position);
  return found->second.entry;
}

void MemoryTier::put(const Key& key, std::shared_ptr<const Entry> entry) {
  const std::lock_guard lock(mutex_);
  if (const auto found = slots_.find(key); found != slots_.end()) {
    bytes_ -= found->second.entry->payload.size();
    order_.erase(found->second.position);
    slots_.erase(found);
  }
  // An entry that alone exceeds a bound is not kept (and does not flush everything else).
  if (!entry || max_entries_ == 0 || entry->payload.size() > max_bytes_) return;
  bytes_ += entry->payload.size();
  order_.push_front(key);
  slots_.emplace(key, Slot{std::move(entry), order_.begin()});
  evict_locked();
}

void MemoryTier::remove(const Key& key) {
  const std::lock_guard lock(mutex_);
  const auto found = slots_.find(key);
  if (found == slots_.end()) return;
  bytes_ -= found->second.entry->payload.size();
  order_.erase(found->second.position);
  slots_.erase(found);
}

void MemoryTier::remove_if(const std::function<bool(const Entry&)>& doomed) {
  const std::lock_guard lock(mutex_);
  for (auto slot = slots_.begin(); slot != slots_.end();) {
    if (!doomed(*slot->second.entry)) {
      ++slot;
      continue;
    }
    bytes_ -= slot->second.entry->payload.size();
    order_.erase(slot->second.position);
    slot = slots_.erase(slot);
  }
}

void MemoryTier::clear() {
  const std::lock_guard lock(mutex_);
  slots_.clear();
  order_.clear();
  bytes_ = 0;
}

std::size_t MemoryTier::size() const {
  const std::lock_guard lock(mutex_);
  return slots_.size();
}

void MemoryTier::evict_locked() {
  while (!order_.empty() && (slots_.size() > max_entries_ || bytes_ > max_bytes_)) {
    const auto found = slots_.find(order_.back());
    bytes_ -= found->second.entry->payload.size();
    slots_.erase(found);
    order_.pop_back();
  }
}

}  // namespace cubby
