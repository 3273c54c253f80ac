// Memory tier: a per-process, thread-safe LRU of decoded entries. Same shape as `Tier`
// (get/put/remove) but holds decoded entries, so a memory hit costs no decoding.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "cubby/entry.hpp"
#include "cubby/key.hpp"

namespace cubby {

class MemoryTier {
 public:
  // Keeps at most `max_entries` entries and `max_bytes` payload bytes (least recently used go).
  explicit MemoryTier(std::size_t max_entries = 1024, std::size_t max_bytes = 1u << 30);

  std::shared_ptr<const Entry> get(const Key& key);
  void put(const Key& key, std::shared_ptr<const Entry> entry);
  void remove(const Key& key);
  // Removes every entry for which `doomed(entry)` is true (called under the tier's lock).
  void remove_if(const std::function<bool(const Entry&)>& doomed);
  void clear();
  std::size_t size() const;

 private:
  struct KeyHash {
    std::size_t operator()(const Key& key) const noexcept;
  };
  using Order = std::list<Key>;
  struct Slot {
    std::shared_ptr<const Entry> entry;
    Order::iterator position;
  };
  void evict_locked();

  mutable std::mutex mutex_;
  std::size_t max_entries_;
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  Order order_;  // front: most recently used
  std::unordered_map<Key, Slot, KeyHash> slots_;
};

}  // namespace cubby
