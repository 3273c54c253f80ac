// Breaker: a circuit breaker around a remote backend. After a failure of the remote itself
// (Errc::io: unreachable, refused, timed out) every call fails at once ("skipped", counted
// remote_skipped, and a skipped put remote_writes_dropped) for the back-off, then the next call
// tries again; a success closes it. Other failures (the server answered, but not usefully) leave it
// as it is. The first trip warns once.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "stats/atomic_stats.hpp"
#include "storage/tier.hpp"

namespace cubby {

class Breaker final : public Tier {
 public:
  // `location`: the remote, credentials redacted (for the warning).
  Breaker(Tier& inner, std::chrono::milliseconds backoff, std::string location,
          AtomicStats& counted);

  Result<std::optional<std::string>> get(const Key& key) override;
  Result<void> put(const Key& key, std::string_view bytes) override;
  Result<void> remove(const Key& key) override;

  // True while calls are skipped.
  bool is_open() const;
  // Opens the breaker for the back-off after `failure` (a failure of the remote itself).
  void trip(const Failure& failure);

 private:
  // nullopt when the call may go ahead, else the "skipped" failure (counted).
  std::optional<Failure> skipped();
  template <class T>
  Result<T> after(Result<T> result);

  Tier& inner_;
  std::chrono::milliseconds backoff_;
  std::string location_;
  AtomicStats& counted_;
  std::atomic<std::int64_t> open_until_ns_{0};  // steady clock; open until then
  std::atomic<bool> warned_{false};
};

}  // namespace cubby
