// RedisBackend: the remote backend over Redis (hiredis, synchronous calls with deadlines); only
// bytes in and out: the envelope, breaker and write-behind queue are the wrappers of remote.hpp.
//
// Values live under "cubby:<32 hex digits of the key>". Writes use SET (EX ttl when configured).
// Connections are pooled (one per concurrent caller, up to a few kept idle). A write refused by
// the server's permissions (NOPERM, READONLY, NOAUTH) makes the backend read-only for the process
// (warned once): it keeps serving reads.
//
// Deadlines: every call (get, put, remove, connect_ahead) ends by remote_deadline(timeout) of its
// start (deadline.hpp), all of it included: waiting for a pooled connection, connecting,
// AUTH/SELECT, sending the command and reading the whole reply. Each socket wait is bounded by the
// time left, so a server that drips its reply fails the call at the deadline (a timeout: counted)
// instead of holding it for ever. Replies are parsed by hiredis's reader; a GET value declared
// longer than `max_value` is rejected (counted remote_rejected) before it is read.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/remote/redis_url.hpp"
#include "storage/remote/remote.hpp"

struct redisContext;

namespace cubby {

// A Redis remote: the URL and its store policies (RemoteOptions: the wrappers').
struct RedisOptions : RemoteOptions {
  RedisUrl url;
  std::uint64_t ttl_s = 0;  // 0: entries never expire
};

class RedisBackend final : public RemoteBackend {
 public:
  RedisBackend(const RedisOptions& options, std::uint64_t max_value, AtomicStats& counted);
  ~RedisBackend() override;  // joins connect_ahead's thread (bounded by the timeout)
  RedisBackend(const RedisBackend&) = delete;
  RedisBackend& operator=(const RedisBackend&) = delete;

  Result<std::optional<std::string>> get(const Key& key) override;
  Result<void> put(const Key& key, std::string_view bytes) override;
  Result<void> remove(const Key& key) override;
  void connect_ahead(std::function<void(const Failure&)> failed) override;
  bool writable() const override { return !read_only_ && !writes_refused_.load(); }

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

  // The longest bulk reply to a command other than GET (SET, DEL, AUTH, SELECT answer a status).
  static constexpr std::uint64_t kMaxStatusReply = 64 << 10;

  // Runs one command on a pooled connection by the call's deadline; a failure is counted. A bulk
  // reply declared longer than `limit` and any array reply are rejected unread (Errc::corrupt,
  // counted).
  Result<Reply> call(std::initializer_list<std::string_view> args,
                     std::uint64_t limit = kMaxStatusReply);
  // A new connection, authenticated and on its database, by `deadline`; a failure is counted.
  Result<Connection> connect(Clock::time_point deadline);
  // An idle pooled connection (or the one connect_ahead is opening), else a new one, by
  // `deadline`.
  Result<Connection> pooled_connection(Clock::time_point deadline);
  void pool(Connection connection);
  // The failure of a call whose connection broke or timed out (counted as a timeout or error).
  Failure connection_failure(const redisContext& context, Clock::time_point deadline,
                             const std::string& doing);
  std::string timed_out() const;
  void warn_once(std::atomic<bool>& flag, const std::string& message);

  RedisUrl url_;
  std::string location_;
  bool read_only_;
  std::chrono::milliseconds timeout_;
  std::uint64_t ttl_s_;
  std::uint64_t max_value_;
  AtomicStats& counted_;

  std::mutex pool_mutex_;
  std::vector<Connection> idle_;
  bool connecting_ = false;    // connect_ahead's connection is being opened (under pool_mutex_)
  bool ahead_failed_ = false;  // and it failed (under pool_mutex_)
  std::condition_variable connected_cv_;
  std::thread connector_;  // connect_ahead's thread (joined by the destructor)
  std::atomic<bool> writes_refused_{false};
  std::atomic<bool> warned_refused_{false};
};

// A remote tier over Redis with `options` (what open_remote_tier builds for redis:// URLs).
std::unique_ptr<RemoteTier> open_redis_remote(const RedisOptions& options);

}  // namespace cubby
