// The remote tier: entries shared by a fleet of machines (README "Remote tier"), composed of a
// bytes backend (Redis: redis.hpp) wrapped, from the outside in, by the envelope (sign + compress +
// size limit: envelope.hpp), the circuit breaker (breaker.hpp) and, for writes off the caller's
// path, the write-behind queue (write_behind.hpp). A new backend implements RemoteBackend and gets
// every policy from the wrappers; `open_remote_tier` picks it by the URL's scheme.
//
// Contract: a remote never makes a lookup fail or wait long. Every call ends within the configured
// timeout, all of it included (connect, handshake, request, the whole reply, however slowly the
// server sends it); a call that fails (refused, reset, timed out, error reply) returns a
// failure that the orchestrator treats as a miss, and after an I/O failure or a timeout the tier
// answers at once ("skipped") for the configured back-off before trying again (circuit breaker).
// Values that are unsigned or badly signed (with a secret), or bigger than the size limit, are
// rejected (a failure, counted). The tier knows nothing of entry content: decoding and
// verification are the orchestrator's.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "cubby/config.hpp"
#include "cubby/stats.hpp"
#include "stats/atomic_stats.hpp"
#include "storage/remote/breaker.hpp"
#include "storage/remote/envelope.hpp"
#include "storage/remote/write_behind.hpp"
#include "storage/tier.hpp"

namespace cubby {

// A store of bytes by key somewhere else (a server). Its calls end by remote_deadline (see
// deadline.hpp) of their timeout. Failures: Errc::io when the remote itself failed (unreachable,
// refused, timed out: the breaker opens), Errc::corrupt when it answered with an error or
// something that is not a value, Errc::invalid_argument for a put while it is not writable.
// It counts its own remote_* counters (errors, timeouts, bytes, writes) into the AtomicStats it
// is given.
class RemoteBackend : public Tier {
 public:
  // Opens a connection on a thread of its own and returns at once; a call made meanwhile waits
  // for it rather than opening another one (and is skipped if it failed). `failed` is called on
  // that thread when it fails.
  virtual void connect_ahead(std::function<void(const Failure&)> failed) = 0;
  // False in read mode or after the remote refused a write (then the process only reads).
  virtual bool writable() const = 0;
};

// The policies of the wrappers (CUBBY_REMOTE_* settings).
struct RemoteOptions {
  std::string location;  // redacted URL, for messages
  std::string secret;    // non-empty: sign writes, accept only signed values
  bool read_only = false;
  std::chrono::milliseconds timeout{500};  // the deadline of each whole call
  std::chrono::milliseconds backoff{30000};
  std::uint64_t max_entry = 64ull << 20;
  bool compress = true;  // LZ4-compress written values (compress.hpp); reads accept both forms
  std::size_t queue_entries = 256;           // background write queue bound (entries)
  std::uint64_t queue_bytes = 256ull << 20;  // and bytes
};

class RemoteTier final : public Tier {
 public:
  // `counted`: the AtomicStats `backend` counts into (shared with the wrappers).
  RemoteTier(std::unique_ptr<RemoteBackend> backend, const RemoteOptions& options,
             std::shared_ptr<AtomicStats> counted);
  // Drains the write queue: returns within max(1 s, 4 x timeout) (plus a connect_ahead still
  // running, itself bounded by the timeout), even while a write is being dripped.
  ~RemoteTier() override;
  RemoteTier(const RemoteTier&) = delete;
  RemoteTier& operator=(const RemoteTier&) = delete;

  Result<std::optional<std::string>> get(const Key& key) override { return envelope_.get(key); }
  Result<void> put(const Key& key, std::string_view bytes) override {
    return envelope_.put(key, bytes);
  }
  Result<void> remove(const Key& key) override { return envelope_.remove(key); }

  // Queues `bytes` to be `put` by a background thread and returns at once. The queue is bounded;
  // a write that does not fit is dropped (counted); in read mode nothing is queued.
  void put_later(const Key& key, std::string bytes);
  // Waits until queued writes are done, at most `bound`; what is still queued then is dropped. The
  // writes started meanwhile end (or fail) by then too, and one already in flight within the
  // timeout of its start: with `bound` >= the timeout, no write outlives the drain.
  void drain(std::chrono::milliseconds bound) { writer_.drain(bound); }
  // drain at exit (the destructor, Cache::finish): bounded by max(1 s, 4 x timeout).
  void drain() {
    drain(std::max<std::chrono::milliseconds>(std::chrono::seconds(1), 4 * timeout_));
  }
  // Opens a connection in the background, so that the first lookup need not wait for one (the
  // orchestrator calls it for a fresh store folder, whose lookups all go to the remote). A
  // failure counts and trips the breaker as a lookup's would. At most once per tier.
  void connect_ahead();
  // What the tier counted since it was opened (monotonic), as the remote_* counters of Stats
  // that the tier itself counts (failures, rejected values, writes); the orchestrator counts the
  // others (hits_remote, remote_misses, remote_ms). The rest are 0.
  Stats counters() const { return counted_->snapshot(); }
  // Where the remote is, with credentials redacted: safe for messages, logs and stats.
  const std::string& location() const { return location_; }

 private:
  std::string location_;
  std::shared_ptr<AtomicStats> counted_;
  Breaker breaker_;
  Envelope envelope_;
  std::chrono::milliseconds timeout_;
  // After the wrappers: its destructor waits for connect_ahead, whose failure callback trips
  // breaker_, so breaker_ must outlive it.
  std::unique_ptr<RemoteBackend> backend_;
  WriteBehind writer_;  // last: its writes are done (or dropped) before the rest goes
};

// A kind of remote, by the prefix of its URLs: `open` makes its backend and wraps it in a
// RemoteTier with `options` (the wrappers' policies, filled in from the Config), or warns (with
// `options.location`, the redacted URL) and returns nullptr when the URL is not usable.
struct RemoteScheme {
  std::string_view prefix;  // "redis://"
  std::unique_ptr<RemoteTier> (*open)(const Config& config, RemoteOptions options);
};

// The schemes cubby knows (redis://). A new backend is a line in remote.cpp's table.
std::span<const RemoteScheme> remote_schemes();

// The remote tier `config` names (remote_url), or nullptr when it names none. The URL's scheme
// picks the backend among `schemes`; an unknown scheme or a URL that does not parse is not an
// error either: a warning on stderr (credentials redacted) and nullptr. Opens no connection: the
// first call connects.
std::unique_ptr<RemoteTier> open_remote_tier(const Config& config,
                                             std::span<const RemoteScheme> schemes);
inline std::unique_ptr<RemoteTier> open_remote_tier(const Config& config) {
  return open_remote_tier(config, remote_schemes());
}

// A CUBBY_REMOTE URL with its credentials replaced by "***": safe to print.
std::string redact_remote_url(std::string_view url);

}  // namespace cubby
