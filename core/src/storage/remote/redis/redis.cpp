#include "storage/remote/redis/redis.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <system_error>

#include "net/deadline.hpp"
#include "storage/remote/redis/redis_command.hpp"

namespace cubby {
namespace {

// Error replies about the key asked for, not the server: that key fails, the server is fine.
bool is_per_key_error(std::string_view error) { return error.starts_with("WRONGTYPE"); }

// Error replies that refuse this client's writes (its user's permissions, a replica): the
// backend stops writing, and keeps reading.
bool is_write_refusal(std::string_view error) {
  return error.starts_with("NOPERM") || error.starts_with("READONLY") ||
         error.starts_with("NOAUTH");
}

// Whether the command `args` may be sent again after a kept connection was found closed with no
// reply (the server may have applied it before it closed): only commands that, applied twice,
// leave what applying them once leaves. GET and CLUSTER NODES read. SET writes a value under a
// content-addressed key (the hash of everything that produced it): every value written under a
// key is a valid entry for it, so writing one twice is writing it once. DEL of a key leaves it
// absent however often it is applied. AUTH and SELECT are sent on new connections only (never
// kept), ASKING is sent again with the command it precedes.
bool safe_to_send_twice(std::initializer_list<std::string_view> args) {
  if (args.size() == 0) return false;
  const std::string_view name = *args.begin();
  return name == "GET" || name == "SET" || name == "DEL" ||
         (name == "CLUSTER" && args.size() == 2 && *(args.begin() + 1) == "NODES");
}

// How many idle connections the pool keeps per server.
constexpr std::size_t kIdleConnections = 4;

// How often the slot map is read again at most.
constexpr auto kRefreshInterval = std::chrono::seconds(1);

}  // namespace

void RedisBackend::ReaderFree::operator()(redisReader* reader) const { redisReaderFree(reader); }
void RedisBackend::ReplyFree::operator()(void* reply) const { freeReplyObject(reply); }

int RedisBackend::Answer::type() const {
  return bulk ? REDIS_REPLY_STRING : static_cast<const redisReply*>(reply.get())->type;
}

std::string_view RedisBackend::Answer::text() const {
  if (bulk) return *bulk;
  const auto* parsed = static_cast<const redisReply*>(reply.get());
  return {parsed->str != nullptr ? parsed->str : "", parsed->len};
}

RedisBackend::RedisBackend(const RedisOptions& options, std::uint64_t max_value,
                           AtomicStats& counted, std::shared_ptr<const TlsContext> tls)
    : url_(options.url),
      home_{options.url.host, options.url.port, options.url.unix_path},
      location_(options.location),
      read_only_(options.read_only),
      timeout_(options.timeout),
      backoff_(options.backoff),
      ttl_s_(options.ttl_s),
      max_value_(max_value),
      counted_(counted),
      dialer_(options.location, options.timeout, std::move(tls), options.resolver, counted) {
  seeds_.push_back(home_);
  for (const RedisHost& node : options.url.more_seeds) seeds_.push_back({node.host, node.port, {}});
}

bool RedisBackend::is_seed(const Endpoint& endpoint) const {
  return std::find(seeds_.begin(), seeds_.end(), endpoint) != seeds_.end();
}

RedisBackend::~RedisBackend() {
  if (connector_.joinable()) connector_.join();
}

std::string RedisBackend::redis_key(const Key& key) { return "cubby:" + key.hex(); }

bool RedisBackend::is_cluster() const {
  std::lock_guard lock(cluster_mutex_);
  return slots_ != nullptr;
}

void RedisBackend::warn_once(std::atomic<bool>& flag, const std::string& message) {
  if (!flag.exchange(true)) std::fprintf(stderr, "cubby: %s\n", message.c_str());
}

Failure RedisBackend::connection_failure(const Connection& stream, RemoteDeadline deadline,
                                         const std::string& doing) {
  const bool timeout = stream.timed_out() || passed(deadline);
  counted_.add(timeout ? Stat::remote_timeouts : Stat::remote_errors);
  return fail(Errc::io, location_, ": ", doing, timeout ? dialer_.timed_out() : stream.error());
}

Result<RedisBackend::SessionPtr> RedisBackend::connect(const Endpoint& endpoint,
                                                       RemoteDeadline deadline) {
  auto opened = dialer_.open(endpoint, deadline);
  if (!opened) return std::move(opened).error();
  auto connection = std::make_unique<Session>();
  connection->endpoint = endpoint;
  connection->stream = std::move(opened).value();
  connection->reader.reset(redisReaderCreate());
  if (!connection->reader) return fail(Errc::io, "out of memory connecting to ", location_);
  auto handshake = [&](std::initializer_list<std::string_view> args) -> Result<void> {
    CommandEnded ended = CommandEnded::io;
    const Answer reply = redis_command(*connection->stream, *connection->reader, args, deadline,
                                       kMaxStatusReply, ended);
    if (!reply && ended != CommandEnded::io) {
      counted_.add(Stat::remote_errors);
      return fail(Errc::io, location_, " answered ", std::string(*args.begin()),
                  " with something that is not a Redis status reply: not a Redis server?");
    }
    if (!reply) return connection_failure(*connection->stream, deadline, "");
    if (reply.type() == REDIS_REPLY_ERROR) {
      // The server's words (WRONGPASS, NOAUTH, ...) never contain the password.
      counted_.add(Stat::remote_errors);
      return fail(Errc::io, location_, " refused the connection: ", std::string(reply.text()));
    }
    return {};
  };
  if (!url_.password.empty()) {
    auto authed = url_.user.empty() ? handshake({"AUTH", url_.password})
                                    : handshake({"AUTH", url_.user, url_.password});
    if (!authed) return std::move(authed).error();
  }
  if (url_.db != 0) {
    const std::string db = std::to_string(url_.db);
    if (auto selected = handshake({"SELECT", db}); !selected) return std::move(selected).error();
  }
  return connection;
}

void RedisBackend::connect_ahead(std::function<void(const Failure&)> failed) {
  {
    std::lock_guard lock(pool_mutex_);
    if (connecting_ || connector_.joinable() || !idle_.empty()) return;  // once per backend
    connecting_ = true;
  }
  auto run = [this, failed = std::move(failed)] {
    // The URL's first node, else (a cluster URL) the next one that accepts.
    const RemoteDeadline deadline = remote_deadline(timeout_);
    auto connection = connect(seeds_.front(), deadline);
    for (std::size_t next = 1; !connection && next < seeds_.size() && !passed(deadline); ++next) {
      connection = connect(seeds_[next], deadline);
    }
    const bool connected = connection.ok();
    if (!connected) failed(connection.error());
    std::lock_guard lock(pool_mutex_);
    if (connected && idle_.size() < kIdleConnections) {
      idle_.push_back(std::move(connection).value());
    }
    ahead_failed_ = !connected;
    connecting_ = false;
    connected_cv_.notify_all();
  };
  try {
    connector_ = std::thread(std::move(run));
  } catch (const std::system_error&) {  // no thread: the first lookup connects, as without this
    std::lock_guard lock(pool_mutex_);
    connecting_ = false;
  }
}

Result<RedisBackend::SessionPtr> RedisBackend::pooled_connection(const Endpoint& endpoint,
                                                                 RemoteDeadline deadline,
                                                                 bool& kept) {
  kept = false;
  {
    // A connection being opened ahead (to a node the URL names) is waited for rather than opened
    // twice (its connect and handshake have a deadline of their own, before this call's); if it
    // failed, this call is skipped as the breaker it tripped would have skipped it.
    std::unique_lock lock(pool_mutex_);
    const bool waited = connecting_ && is_seed(endpoint);
    if (waited && !connected_cv_.wait_until(lock, deadline, [&] { return !connecting_; })) {
      counted_.add(Stat::remote_timeouts);
      return fail(Errc::io, location_, ": ", dialer_.timed_out());
    }
    if (waited && ahead_failed_) {
      counted_.add(Stat::remote_skipped);
      return fail(Errc::io, location_, " failed to connect just now; skipped");
    }
    const auto found = std::find_if(idle_.rbegin(), idle_.rend(),
                                    [&](const SessionPtr& c) { return c->endpoint == endpoint; });
    if (found != idle_.rend()) {
      SessionPtr connection = std::move(*found);
      idle_.erase(std::next(found).base());
      kept = true;
      return connection;
    }
  }
  return connect(endpoint, deadline);
}

void RedisBackend::pool(SessionPtr connection) {
  std::lock_guard lock(pool_mutex_);
  const auto same = std::count_if(idle_.begin(), idle_.end(), [&](const SessionPtr& c) {
    return c->endpoint == connection->endpoint;
  });
  if (static_cast<std::size_t>(same) < kIdleConnections) idle_.push_back(std::move(connection));
}

Result<RedisBackend::Answer> RedisBackend::call_on(const Endpoint& endpoint,
                                                   std::initializer_list<std::string_view> args,
                                                   std::uint64_t limit, bool asking,
                                                   RemoteDeadline deadline) {
  bool kept = false;
  auto pooled = pooled_connection(endpoint, deadline, kept);
  if (!pooled) return std::move(pooled).error();
  SessionPtr connection = std::move(pooled).value();
  CommandEnded ended = CommandEnded::io;
  Answer reply;
  for (;;) {
    Connection& stream = *connection->stream;
    const std::uint64_t before = stream.received();
    const bool asked = !asking || redis_command(stream, *connection->reader, {"ASKING"}, deadline,
                                                kMaxStatusReply, ended);
    if (asked) reply = redis_command(stream, *connection->reader, args, deadline, limit, ended);
    // A kept connection that the server closed meanwhile (its `timeout`, a restart): nothing came
    // back on it; a command safe to send twice is sent again, once, on a new connection.
    const bool found_closed = !reply && ended == CommandEnded::io && kept && !stream.timed_out() &&
                              !passed(deadline) && stream.received() == before;
    if (!found_closed || !safe_to_send_twice(args)) {
      if (!asked) return connection_failure(stream, deadline, "ASKING: ");
      break;
    }
    kept = false;
    auto opened = connect(endpoint, deadline);
    if (!opened) return std::move(opened).error();
    connection = std::move(opened).value();
  }
  Connection& stream = *connection->stream;
  redisReader& reader = *connection->reader;
  // Whenever a call ends early, the connection is out of step (its read buffer holds part of a
  // reply): it is closed, never pooled.
  if (!reply && ended == CommandEnded::refused) {
    counted_.add(Stat::remote_rejected);
    return fail(Errc::corrupt, location_, ": the reply to ", std::string(*args.begin()),
                " is an array or over CUBBY_REMOTE_MAX_ENTRY (or not a Redis reply); not read");
  }
  if (!reply && ended == CommandEnded::protocol) {
    counted_.add(Stat::remote_errors);
    return fail(Errc::io, location_, " answered ", std::string(*args.begin()),
                " with something that is not a Redis reply: not a Redis server?");
  }
  if (!reply) return connection_failure(stream, deadline, "");
  if (reader.pos < reader.len) {  // more than one reply: out of step
    counted_.add(Stat::remote_errors);
    return fail(Errc::io, location_, " sent more than asked for ", std::string(*args.begin()));
  }
  pool(std::move(connection));
  return reply;
}

bool RedisBackend::refresh_slots(const Endpoint& from, RemoteDeadline deadline) {
  {
    std::lock_guard lock(cluster_mutex_);
    if (slots_ != nullptr && Clock::now() - refreshed_ < kRefreshInterval) return false;
    refreshed_ = Clock::now();  // one refresh at a time, once a second at most
  }
  auto reply = call_on(from, {"CLUSTER", "NODES"}, kMaxClusterNodes, false, deadline);
  if (!reply || reply->type() != REDIS_REPLY_STRING) return false;
  auto parsed = parse_cluster_nodes(std::string(reply->text()), from);
  if (!parsed) return false;
  std::lock_guard lock(cluster_mutex_);
  slots_ = std::make_shared<const SlotMap>(std::move(parsed).value());
  // A node that failed stays skipped for its back-off even if the map still names it (the
  // cluster has not noticed yet); a master promoted in its place is another endpoint.
  refresh_wanted_ = false;
  return true;
}

Endpoint RedisBackend::route(std::string_view name, RemoteDeadline deadline) {
  std::shared_ptr<const SlotMap> slots;
  bool refresh = false;
  {
    std::lock_guard lock(cluster_mutex_);
    slots = slots_;
    refresh = refresh_wanted_ && Clock::now() - refreshed_ >= kRefreshInterval;
  }
  if (slots == nullptr && seeds_.size() > 1) slots = discover(deadline);
  if (slots == nullptr) return home_;
  if (refresh) {  // a node failed: ask a working one what the cluster looks like now
    for (const Endpoint& master : slots->masters) {
      bool down = false;
      {
        std::lock_guard lock(cluster_mutex_);
        const auto found = down_until_.find(master.name());
        down = found != down_until_.end() && Clock::now() < found->second;
      }
      if (!down) {
        refresh_slots(master, deadline);
        break;
      }
    }
    std::lock_guard lock(cluster_mutex_);
    slots = slots_;
  }
  const Endpoint* node = slots->node(cluster_slot(name));
  return node != nullptr ? *node : home_;
}

std::shared_ptr<const SlotMap> RedisBackend::discover(RemoteDeadline deadline) {
  for (const Endpoint& seed : seeds_) {
    {
      std::lock_guard lock(cluster_mutex_);
      if (slots_ != nullptr) return slots_;  // another call has read it
      const auto found = down_until_.find(seed.name());
      if (found != down_until_.end() && Clock::now() < found->second) continue;
    }
    if (passed(deadline)) break;
    if (refresh_slots(seed, deadline)) break;
    std::lock_guard lock(cluster_mutex_);
    down_until_[seed.name()] = Clock::now() + backoff_;
  }
  std::lock_guard lock(cluster_mutex_);
  return slots_;
}

Failure RedisBackend::node_failed(const Endpoint& node, Failure failure) {
  {
    std::lock_guard lock(cluster_mutex_);
    down_until_[node.name()] = Clock::now() + backoff_;
    refresh_wanted_ = true;
  }
  warn_once(warned_node_, "the cluster node " + node.name() + " of " + location_ + " failed (" +
                              failure.message + "); the keys of its slots are read and written " +
                              "locally, the node skipped for " + std::to_string(backoff_.count()) +
                              " ms after each failure (CUBBY_REMOTE_BACKOFF_MS); shown once");
  failure.code = Errc::corrupt;  // this node only: the tier's breaker stays closed
  return failure;
}

Result<RedisBackend::Answer> RedisBackend::call(std::string_view name,
                                                std::initializer_list<std::string_view> args,
                                                std::uint64_t limit) {
  const RemoteDeadline deadline = remote_deadline(timeout_);
  Endpoint endpoint = route(name, deadline);
  bool asking = false;
  bool redirected = false;  // the last answer was a redirection (the loop ran out of them)
  std::string error;
  for (int hop = 0; hop <= kMaxRedirects; ++hop) {
    const bool cluster = is_cluster();
    if (cluster) {
      std::lock_guard lock(cluster_mutex_);
      const auto found = down_until_.find(endpoint.name());
      if (found != down_until_.end() && Clock::now() < found->second) {
        counted_.add(Stat::remote_skipped);
        return fail(Errc::corrupt, location_, ": the cluster node ", endpoint.name(),
                    " failed recently; its keys are skipped for now");
      }
    }
    auto reply = call_on(endpoint, args, limit, asking, deadline);
    if (!reply) {
      if (cluster && reply.error().code == Errc::io) {
        return node_failed(endpoint, std::move(reply).error());
      }
      return std::move(reply).error();
    }
    if (reply->type() != REDIS_REPLY_ERROR) return reply;
    error = reply->text();
    if (is_per_key_error(error) || is_write_refusal(error)) return reply;  // the caller's to judge
    const auto redirect = parse_redirect(error, endpoint);
    redirected = redirect.has_value();
    if (!redirected) break;
    if (!redirect->ask) refresh_slots(endpoint, deadline);  // the node that answered knows
    endpoint = redirect->to;
    asking = redirect->ask;
  }
  counted_.add(Stat::remote_errors);
  Failure failure =
      fail(Errc::io, location_, " answered ", std::string(*args.begin()), " with -", error,
           redirected ? " after " + std::to_string(kMaxRedirects) +
                            " redirections (a slot migration left half open? `redis-cli --cluster "
                            "check` shows it, `--cluster fix` closes it)"
                      : std::string(" (the server cannot serve now)"));
  warn_once(warned_error_reply_,
            failure.message + "; kernels are read and written locally meanwhile, the remote is " +
                "skipped for " + std::to_string(backoff_.count()) +
                " ms after each such answer (CUBBY_REMOTE_BACKOFF_MS); counted as remote errors; "
                "shown once");
  if (is_cluster()) return node_failed(endpoint, std::move(failure));
  return failure;
}

Result<std::optional<std::string>> RedisBackend::get(const Key& key) {
  const std::string name = redis_key(key);
  auto called = call(name, {"GET", name}, max_value_);
  if (!called) return std::move(called).error();
  Answer& reply = *called;
  if (reply.type() == REDIS_REPLY_NIL) return std::optional<std::string>();
  if (!reply.bulk) {
    counted_.add(Stat::remote_errors);
    const std::string what = reply.type() == REDIS_REPLY_ERROR ? std::string(reply.text())
                                                               : std::string("not a string value");
    return fail(Errc::corrupt, location_, " answered GET ", name, " with ", what);
  }
  counted_.add(Stat::remote_bytes_read, reply.bulk->size());
  return std::optional<std::string>(std::move(reply.bulk));
}

Result<void> RedisBackend::put(const Key& key, std::string_view bytes) {
  if (!writable()) {
    return fail(Errc::invalid_argument, location_,
                " is read-only for this process (CUBBY_REMOTE_MODE=read or refused writes)");
  }
  const std::string name = redis_key(key);
  const std::string ttl = std::to_string(ttl_s_);
  auto called =
      ttl_s_ > 0 ? call(name, {"SET", name, bytes, "EX", ttl}) : call(name, {"SET", name, bytes});
  if (!called) {
    counted_.add(Stat::remote_writes_dropped);
    return std::move(called).error();
  }
  if (called->type() == REDIS_REPLY_ERROR) {
    counted_.add(Stat::remote_writes_dropped);
    const std::string what(called->text());
    if (is_write_refusal(what)) {
      writes_refused_ = true;
      warn_once(warned_refused_, location_ + " refused a write (" + what +
                                     "); this process only reads it from now on. Set "
                                     "CUBBY_REMOTE_MODE=read for jobs whose Redis user cannot "
                                     "write");
    } else {
      counted_.add(Stat::remote_errors);
    }
    return fail(Errc::corrupt, location_, " refused SET: ", what);
  }
  counted_.add(Stat::remote_writes);
  counted_.add(Stat::remote_bytes_written, bytes.size());
  return {};
}

Result<void> RedisBackend::remove(const Key& key) {
  if (read_only_) {
    return fail(Errc::invalid_argument, location_, " is read-only (CUBBY_REMOTE_MODE)");
  }
  const std::string name = redis_key(key);
  auto called = call(name, {"DEL", name});
  if (!called) return std::move(called).error();
  if (called->type() == REDIS_REPLY_ERROR) {
    counted_.add(Stat::remote_errors);
    return fail(Errc::corrupt, location_, " refused DEL ", name);
  }
  return {};
}

std::unique_ptr<RemoteTier> open_redis_remote(const RedisOptions& options) {
  return open_backend_tier<RedisBackend>(options);
}

}  // namespace cubby
