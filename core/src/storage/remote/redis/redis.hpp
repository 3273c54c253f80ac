// RedisBackend: the remote backend over Redis (synchronous calls with deadlines); only bytes in
// and out: the envelope, breaker and write-behind queue are the wrappers of remote.hpp.
//
// Values live under "cubby:<32 hex digits of the key>". Writes use SET (EX ttl when configured).
// Connections (net/connection.hpp: TCP, unix socket, TLS) are pooled per server (one per
// concurrent caller, up to a few kept idle). A command on a kept connection that the server closed
// meanwhile (its `timeout`, a restart: the connection fails with nothing received, before the
// deadline) is sent again once on a new connection when it is safe to apply twice (GET, SET of a
// content-addressed value, DEL, CLUSTER NODES: redis.cpp's safe_to_send_twice), as the HTTP
// backend does; other failures are not retried. A write refused by the server's permissions
// (NOPERM, READONLY, NOAUTH) makes the backend read-only for the process (warned once): it keeps
// serving reads.
//
// Deadlines: every call (get, put, remove, connect_ahead) ends by remote_deadline(timeout) of its
// start (net/deadline.hpp), all of it included: waiting for a pooled connection, resolving the
// name, connecting, the TLS handshake, AUTH/SELECT, redirections, sending the command and reading
// the whole reply. Each socket wait is bounded by the time left, so a server that drips its reply
// fails the call at the deadline (a timeout: counted) instead of holding it for ever. Each reply's
// first line is checked before anything after it is read: an array (no command sent here answers
// with one) and a bulk value declared longer than `max_value` (GET) or 64 KiB (anything else) are
// rejected (counted remote_rejected) unread. A bulk value is then read straight into the string
// returned (one copy, however big); other replies are parsed by hiredis's reader.
//
// Error replies: a per-key one (WRONGTYPE) is that key's failure (Errc::corrupt). Any other
// (-ERR, -LOADING, -BUSY, -MASTERDOWN, a redirection that cannot be followed, ...) says the server
// cannot serve now: warned once, counted remote_errors, and an Errc::io failure, so the breaker
// backs off.
//
// Redis Cluster: the first -MOVED makes the backend read the slot map (CLUSTER NODES) from the
// node that answered; from then on each key goes to the master of its slot (redis_cluster.hpp),
// -MOVED updates the map (and re-reads it, at most once a second), -ASK is followed once (after
// ASKING); at most kMaxRedirects per call. A cluster node that fails (unreachable, timed out,
// error reply) fails only the calls for its slots: those are skipped for the back-off (counted
// remote_skipped) and returned as Errc::corrupt, so the tier's breaker stays closed for the other
// nodes; the map is re-read (from a node that works) before that node is asked again. A URL that
// names several nodes (redis://a:7000,b:7001,...) is a cluster's: the map is read before the
// first call, from the first of them that answers (connect_ahead connects to the first that
// accepts), so a fresh process finds the cluster while any one of them is up.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/connection.hpp"
#include "net/deadline.hpp"
#include "net/tls_context.hpp"
#include "storage/remote/dialer.hpp"
#include "storage/remote/redis/redis_cluster.hpp"
#include "storage/remote/redis/redis_url.hpp"
#include "storage/remote/remote.hpp"

struct redisReader;

namespace cubby {

// A Redis remote: the URL and its store policies (RemoteOptions: the wrappers').
struct RedisOptions : RemoteOptions {
  RedisUrl url;
  std::uint64_t ttl_s = 0;  // 0: entries never expire
  TlsSettings tls;          // for rediss:// URLs
  Resolver resolver;        // host names to addresses; nullptr: getaddrinfo
};

class RedisBackend final : public RemoteBackend {
 public:
  // `tls`: the TLS context of a rediss:// URL (nullptr for plain connections).
  RedisBackend(const RedisOptions& options, std::uint64_t max_value, AtomicStats& counted,
               std::shared_ptr<const TlsContext> tls = nullptr);
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
  // Whether the backend has found its server to be a cluster (and routes by slot).
  bool is_cluster() const;

  // Redirections one call follows at most.
  static constexpr int kMaxRedirects = 3;

  struct ReplyFree {
    void operator()(void* reply) const;
  };
  // A command's answer: hiredis's reply (a redisReply), except a bulk string, whose bytes are
  // read straight into `bulk` (values are hundreds of KB: no copies through the parser's
  // buffers). Empty when the command gave no answer.
  struct Answer {
    std::unique_ptr<void, ReplyFree> reply;
    std::optional<std::string> bulk;

    explicit operator bool() const { return reply != nullptr || bulk.has_value(); }
    // REDIS_REPLY_* (STRING for `bulk`).
    int type() const;
    // An error's or status's text, or the bulk string.
    std::string_view text() const;
  };

 private:
  struct ReaderFree {
    void operator()(redisReader* reader) const;
  };
  // One open connection and its reply parser.
  struct Session {
    Endpoint endpoint;
    std::unique_ptr<Connection> stream;
    std::unique_ptr<redisReader, ReaderFree> reader;
  };
  using SessionPtr = std::unique_ptr<Session>;
  using Clock = RemoteClock;

  // The longest bulk reply to a command other than GET (SET, DEL, AUTH, SELECT answer a status).
  static constexpr std::uint64_t kMaxStatusReply = 64 << 10;
  // The longest CLUSTER NODES reply read.
  static constexpr std::uint64_t kMaxClusterNodes = 16 << 20;

  // Runs one command about Redis key `name` by the call's deadline, on the server that serves it
  // (following redirections); a failure is counted. A bulk reply declared longer than `limit` and
  // any array reply are rejected unread (Errc::corrupt, counted). An error reply other than a
  // per-key one fails the call (see the header comment).
  Result<Answer> call(std::string_view name, std::initializer_list<std::string_view> args,
                      std::uint64_t limit = kMaxStatusReply);
  // One command on a pooled connection to `endpoint`, after ASKING when `asking` (sent again on a
  // new connection when a kept one was found closed: see the header comment).
  Result<Answer> call_on(const Endpoint& endpoint, std::initializer_list<std::string_view> args,
                         std::uint64_t limit, bool asking, RemoteDeadline deadline);
  // A new connection to `endpoint`, authenticated and on its database, by `deadline`; a failure
  // is counted.
  Result<SessionPtr> connect(const Endpoint& endpoint, RemoteDeadline deadline);
  // An idle pooled connection to `endpoint` (or the one connect_ahead is opening): `kept` true;
  // else a new one, by `deadline`.
  Result<SessionPtr> pooled_connection(const Endpoint& endpoint, RemoteDeadline deadline,
                                       bool& kept);
  void pool(SessionPtr connection);
  // The failure of a call whose connection broke or timed out (counted as a timeout or error).
  Failure connection_failure(const Connection& stream, RemoteDeadline deadline,
                             const std::string& doing);
  // Re-reads the slot map from `from` by `deadline`; false (nothing changed) when it cannot.
  bool refresh_slots(const Endpoint& from, RemoteDeadline deadline);
  // A cluster URL's slot map: read from the first of its nodes, in order, that answers (a node
  // that does not is skipped for the back-off); null when none answered by `deadline`.
  std::shared_ptr<const SlotMap> discover(RemoteDeadline deadline);
  // Whether the URL names `endpoint`.
  bool is_seed(const Endpoint& endpoint) const;
  // Where Redis key `name` goes: its slot's master in cluster mode, else the URL's server (a
  // cluster URL's map is read first: discover).
  Endpoint route(std::string_view name, RemoteDeadline deadline);
  // In cluster mode, a failure of `node` alone: its slots are skipped for the back-off.
  Failure node_failed(const Endpoint& node, Failure failure);
  void warn_once(std::atomic<bool>& flag, const std::string& message);

  RedisUrl url_;
  Endpoint home_;                // the URL's server (its first node)
  std::vector<Endpoint> seeds_;  // every node the URL names, home_ first
  std::string location_;
  bool read_only_;
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds backoff_;
  std::uint64_t ttl_s_;
  std::uint64_t max_value_;
  AtomicStats& counted_;
  Dialer dialer_;

  std::mutex pool_mutex_;
  std::vector<SessionPtr> idle_;
  bool connecting_ = false;    // connect_ahead's connection is being opened (under pool_mutex_)
  bool ahead_failed_ = false;  // and it failed (under pool_mutex_)
  std::condition_variable connected_cv_;
  std::thread connector_;  // connect_ahead's thread (joined by the destructor)
  std::atomic<bool> writes_refused_{false};
  std::atomic<bool> warned_refused_{false};
  std::atomic<bool> warned_error_reply_{false};
  std::atomic<bool> warned_node_{false};

  mutable std::mutex cluster_mutex_;
  std::shared_ptr<const SlotMap> slots_;  // null until the server is found to be a cluster
  Clock::time_point refreshed_{};         // when slots_ was last read
  bool refresh_wanted_ = false;           // a node failed: re-read the map before the next call
  std::map<std::string, Clock::time_point> down_until_;  // by Endpoint::name()
};

// A remote tier over Redis with `options` (what open_remote_tier builds for redis://, rediss://
// and unix:// URLs); nullptr with a warning when its TLS settings cannot be used.
std::unique_ptr<RemoteTier> open_redis_remote(const RedisOptions& options);

}  // namespace cubby
