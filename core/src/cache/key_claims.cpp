#include "cache/key_claims.hpp"

#include <utility>

namespace cubby {

void KeyClaims::hold(const Key& key, FileLock lock) {
  std::lock_guard guard(mutex_);
  held_.insert_or_assign(key, std::move(lock));
}

bool KeyClaims::holds(const Key& key) {
  std::lock_guard guard(mutex_);
  return held_.contains(key);
}

void KeyClaims::release(const Key& key) {
  std::lock_guard guard(mutex_);
  held_.erase(key);
}

}  // namespace cubby
