// Who produces a key: the Cache's single flight. In the process, one producer per key at a time
// (a mutex per stripe of keys: later callers wait, then find what the first stored); across
// processes, the per-key file lock (lock.hpp), which a compile holds while it compiles and
// load_or_claim_blob hands to its caller as a claim, held here until the blob is stored or given
// back. Thread-safe.
#pragma once

#include <array>
#include <map>
#include <mutex>

#include "cubby/key.hpp"
#include "storage/local/lock.hpp"

namespace cubby {

class KeyClaims {
 public:
  // The in-process mutex of `key`'s stripe: held while the key is looked up and produced.
  std::mutex& stripe(const Key& key) { return stripes_[key.bytes[0] % stripes_.size()]; }

  // Keeps `lock` (the file lock of `key`) as the claim on `key` until release.
  void hold(const Key& key, FileLock lock);
  // Whether a claim on `key` is held.
  bool holds(const Key& key);
  // Gives back the claim on `key` (its lock is released); nothing without one.
  void release(const Key& key);

 private:
  std::array<std::mutex, 64> stripes_;
  std::mutex mutex_;
  std::map<Key, FileLock> held_;
};

}  // namespace cubby
