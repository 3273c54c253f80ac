// The remote tier: entries shared by a fleet of machines (docs/remote.md: the URLs, settings and
// servers), composed of a bytes backend (Redis: redis/redis.hpp; HTTP(S): http/http.hpp; both
// open their connections with dialer.hpp over the transport in net/) wrapped, from the outside
// in, by the envelope (sign + compress + size limit: envelope.hpp), the circuit breaker
// (breaker.hpp) and, for writes off the caller's path, the write-behind queue (write_behind.hpp).
// A new backend implements RemoteBackend and gets every policy from the wrappers;
// `open_remote_tier` picks it by the URL's scheme. Several remotes can be layered (layered.hpp):
// read in order, written to the first writable one.
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
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cubby/config.hpp"
#include "cubby/stats.hpp"
#include "stats/atomic_stats.hpp"
#include "storage/remote/breaker.hpp"
#include "storage/remote/envelope.hpp"
#include "storage/remote/write_behind.hpp"
#include "storage/tier.hpp"

namespace cubby {

// A store of bytes by key somewhere else (a server). Its calls end by remote_deadline (see
// net/deadline.hpp) of their timeout. Failures: Errc::io when the remote itself failed
// (unreachable, refused, timed out: the breaker opens), Errc::corrupt when it answered with an
// error or something that is not a value, Errc::invalid_argument for a put while it is not
// writable. It counts its own remote_* counters (errors, timeouts, bytes, writes) into the
// AtomicStats it is given.
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
  // The URL's attributes (`URL|name=value|name`, see open_remote_tier) other than read-only, for
  // the scheme's `open` to read (layout=bazel for http); it refuses the ones it does not know.
  std::vector<std::pair<std::string, std::string>> attributes;
};

// What the orchestrator holds: one remote (RemoteTier) or layers of them (LayeredRemote,
// layered.hpp), behind one interface. get/put/remove are the Tier's; a failure is a miss.
class Remote : public Tier {
 public:
  // Whether `value` is a valid entry for the key it was read under (the orchestrator's entry
  // check: decode, lowered names, symbols). A failure says why not; Errc::not_found: an entry of
  // another format version (a miss, not a bad value).
  using ValueCheck = std::function<Result<void>(std::string_view value)>;

  // get(key) where the remote may hold more than one value for `key`: layers (layered.hpp) pass
  // over a layer's value that fails `check` and ask the next layer. One remote returns what get
  // returns, unchecked: the caller checks every value it takes either way.
  virtual Result<std::optional<std::string>> get_checked(const Key& key,
                                                         const ValueCheck& /*check*/) {
    return get(key);
  }
  // Queues `bytes` to be `put` by a background thread and returns at once. The queue is bounded;
  // a write that does not fit is dropped (counted); where nothing is writable nothing is queued.
  virtual void put_later(const Key& key, std::string bytes) = 0;
  // Waits until queued writes are done, at most `bound`; what is still queued then is dropped. The
  // writes started meanwhile end (or fail) by then too, and one already in flight within the
  // timeout of its start: with `bound` >= the timeout, no write outlives the drain.
  virtual void drain(std::chrono::milliseconds bound) = 0;
  // drain at exit (the destructor, Cache::finish): bounded by max(1 s, 4 x timeout).
  virtual void drain() = 0;
  // Opens connections in the background, so that the first lookup need not wait for one (the
  // orchestrator calls it for a fresh store folder, whose lookups all go to the remote). A
  // failure counts and trips the breaker as a lookup's would. At most once per tier.
  virtual void connect_ahead() = 0;
  // False when no write can go anywhere (read mode, read-only layers, refused writes).
  virtual bool writable() const = 0;
  // What the tier counted since it was opened (monotonic), as the remote_* counters of Stats
  // that the tier itself counts (failures, rejected values, writes); the orchestrator counts the
  // others (hits_remote, remote_misses, remote_ms). The rest are 0.
  virtual Stats counters() const = 0;
  // Where the remote is, with credentials redacted: safe for messages, logs and stats.
  virtual const std::string& location() const = 0;
};

// One remote: a backend wrapped in the envelope, the breaker and the write-behind queue.
class RemoteTier final : public Remote {
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

  void put_later(const Key& key, std::string bytes) override;  // in read mode: nothing queued
  void drain(std::chrono::milliseconds bound) override { writer_.drain(bound); }
  void drain() override {
    drain(std::max<std::chrono::milliseconds>(std::chrono::seconds(1), 4 * timeout_));
  }
  void connect_ahead() override;
  bool writable() const override { return backend_->writable(); }
  Stats counters() const override { return counted_->snapshot(); }
  const std::string& location() const override { return location_; }

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
// RemoteTier with `options` (the wrappers' policies, filled in from the Config, and the URL's
// attributes), or warns (with `options.location`, the redacted URL) and returns nullptr when the
// URL (config.remote_url: one layer's, without its attributes) is not usable.
struct RemoteScheme {
  std::string_view prefix;  // "redis://"
  std::unique_ptr<RemoteTier> (*open)(const Config& config, RemoteOptions options);
};

// The schemes cubby knows (redis://, http://, https://). A new backend is a line in remote.cpp's
// table.
std::span<const RemoteScheme> remote_schemes();

// The remote `config` names (remote_url), or nullptr when it names none. remote_url is one URL or
// layers: URLs separated by white space, read in that order and written to the first writable
// one, each with optional attributes after '|':
//   CUBBY_REMOTE="https://cache.example/main|read-only redis://pr-cache:6379"
// `read-only` (any scheme) makes a layer one that is never written; the scheme reads the others
// (http: layout=flat|bazel). Each URL's scheme picks its backend among `schemes`. A layer whose
// URL is unknown or does not parse is left out with a warning on stderr (credentials redacted);
// nullptr when none is left. Opens no connection: the first call connects.
std::unique_ptr<Remote> open_remote_tier(const Config& config,
                                         std::span<const RemoteScheme> schemes);
inline std::unique_ptr<Remote> open_remote_tier(const Config& config) {
  return open_remote_tier(config, remote_schemes());
}

// For a scheme's `open`: false, with a warning naming the attribute, when `options` holds
// attributes other than those in `known` (a misspelt attribute never passes silently).
bool known_attributes(const RemoteOptions& options, std::initializer_list<std::string_view> known);

// A CUBBY_REMOTE value (one URL or layers) with its credentials replaced by "***": safe to print.
std::string redact_remote_url(std::string_view url);

}  // namespace cubby
