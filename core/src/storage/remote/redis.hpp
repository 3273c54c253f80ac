// RedisTier: the remote tier over Redis (hiredis, synchronous calls with deadlines).
//
// Values live under "cubby:<32 hex digits of the key>": encoded entries, LZ4-compressed
// (compress.hpp) unless disabled, inside a signed envelope (sign.hpp) with a secret. Writes use SET
// (EX ttl when configured). Connections are pooled (one per concurrent caller, up to a few kept
// idle); the background writer uses its own. A write refused by the server's permissions (NOPERM,
// READONLY) disables writes for the process (warned once): the tier keeps serving reads.
//
// Deadlines: every call (get, put, remove, the background writer's puts, connect_ahead) ends
// within `timeout` of its start, all of it included: waiting for a pooled connection, connecting,
// AUTH/SELECT, sending the command and reading the whole reply. Each socket wait is bounded by the
// time left, so a server that drips its reply fails the call at the deadline (a timeout: counted,
// the breaker opens) instead of holding it for ever.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "storage/remote/remote.hpp"
#include "stats/atomic_stats.hpp"
#include "storage/remote/redis_url.hpp"

struct redisContext;

namespace cubby {

struct RedisOptions {
  RedisUrl url;
  std::string location;  // redacted URL, for messages
  std::string secret;    // non-empty: sign writes, accept only signed values
  bool read_only = false;
  std::chrono::milliseconds timeout{500};  // the deadline of each whole call
  std::chrono::milliseconds backoff{30000};
  std::uint64_t max_entry = 64ull << 20;
  std::uint64_t ttl_s = 0;
  bool compress = true;  // LZ4-compress written values (compress.hpp); reads accept both forms
  std::size_t queue_entries = 256;           // background write queue bound (entries)
  std::uint64_t queue_bytes = 256ull << 20;  // and bytes
};

class RedisTier final : public RemoteTier {
 public:
  explicit RedisTier(RedisOptions options);
  // Drains the write queue: returns within max(1 s, 4 x timeout) (plus a connect_ahead still
  // running, itself bounded by the timeout), even while a write is being dripped.
  ~RedisTier() override;
  RedisTier(const RedisTier&) = delete;
  RedisTier& operator=(const RedisTier&) = delete;

  std::string_view name() const override { return "redis"; }
  Result<std::optional<std::string>> get(const Key& key) override;
  Result<void> put(const Key& key, std::string_view bytes) override;
  Result<void> remove(const Key& key) override;

  void put_later(const Key& key, std::string bytes) override;
  void drain(std::chrono::milliseconds bound) override;
  void connect_ahead() override;
  Stats counters() const override;
  std::string location() const override { return options_.location; }

  // The Redis key that holds `key`'s value.
  static std::string redis_key(const Key& key);

 private:
  struct ContextFree {
    void operator()(redisContext* context) const;
  };
  using Connection = std::unique_ptr<redisContext, ContextFree>;
  struct ReplyFree {
    void operator()(void* reply) const;
  };
  using Reply = std::unique_ptr<void, ReplyFree>;

  using Clock = std::chrono::steady_clock;

  // Runs one command on a pooled connection, under the breaker, by the call's deadline (the
  // timeout from now, or `cap` if earlier); a failure is counted.
  Result<Reply> call(std::initializer_list<std::string_view> args, Clock::time_point cap);
  // A new connection, authenticated and on its database, by `deadline`; a failure is counted.
  Result<Connection> connect(Clock::time_point deadline);
  // GET `name` on a pooled connection, under the breaker, with the value read from the socket
  // straight into the returned string (no intermediate copies); nullopt for a missing key.
  // Values longer than `limit` are rejected (counted) before anything is allocated for them.
  Result<std::optional<std::string>> get_value(const std::string& name, std::uint64_t limit);
  // An idle pooled connection (or the one connect_ahead is opening), else a new one, by
  // `deadline`; fails at once while the breaker is open.
  Result<Connection> pooled_connection(Clock::time_point deadline);
  void pool(Connection connection);
  // put, with the call's deadline capped at `cap`.
  Result<void> write(const Key& key, std::string_view bytes, Clock::time_point cap);
  // What a failure message says for a call past its deadline.
  std::string timed_out() const;
  void note_failure(bool timeout, const std::string& what);
  void warn_once(std::atomic<bool>& flag, const std::string& message);
  void writer_loop();

  RedisOptions options_;
  std::mutex pool_mutex_;
  std::vector<Connection> idle_;
  bool connecting_ = false;  // connect_ahead's connection is being opened (under pool_mutex_)
  std::condition_variable connected_cv_;
  std::thread connector_;                       // connect_ahead's thread (joined by the destructor)
  std::atomic<std::int64_t> open_until_ns_{0};  // steady clock; breaker open until then

  AtomicStats counted_;  // the remote_* counters (see counters())
  std::atomic<bool> writes_refused_{false};
  std::atomic<bool> warned_failure_{false}, warned_refused_{false}, warned_rejected_{false};

  std::mutex queue_mutex_;
  std::condition_variable queue_cv_, idle_cv_;
  std::deque<std::pair<Key, std::string>> queue_;
  std::uint64_t queued_bytes_ = 0;
  bool writing_ = false;  // the writer holds a popped write
  // While a drain runs: when it gives up; the writes it starts end by then (else max()).
  Clock::time_point drain_until_ = Clock::time_point::max();
  bool stopping_ = false;
  std::thread writer_;
};

}  // namespace cubby
