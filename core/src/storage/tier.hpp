// The interface every persistent storage tier shares: the disk tier, a remote backend (Redis or
// HTTP: storage/remote/redis/, storage/remote/http/) and each wrapper the remote tier composes
// around it (breaker, envelope, write-behind, layers: storage/remote/). Tiers hold bytes (encoded
// entries, see entry.hpp) and know nothing about their content.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cubby/error.hpp"
#include "cubby/key.hpp"

namespace cubby {

class Tier {
 public:
  virtual ~Tier() = default;

  // The bytes stored under `key`, nullopt if there are none, or a failure (I/O error, ...).
  virtual Result<std::optional<std::string>> get(const Key& key) = 0;

  // Stores `bytes` under `key` so that a concurrent `get` sees either nothing, the old bytes, or
  // all of the new ones, never a part.
  virtual Result<void> put(const Key& key, std::string_view bytes) = 0;

  // Removes what is stored under `key`; success if nothing was there.
  virtual Result<void> remove(const Key& key) = 0;
};

}  // namespace cubby
