#include "storage/remote/redis.hpp"

#include <hiredis/hiredis.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <system_error>

#include "storage/remote/deadline.hpp"

namespace cubby {
namespace {

using Clock = std::chrono::steady_clock;

timeval to_timeval(std::chrono::microseconds us) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(us.count() / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(us.count() % 1000000);
  return tv;
}

// A remote call's deadline covers all of it: connect, handshake, request and the whole reply.
// Every socket wait of the call (connect, each read, each write) is bounded by the time left, so a
// server that drips its reply a byte at a time cannot stretch the call past its deadline.
using Deadline = Clock::time_point;

bool passed(Deadline deadline) { return Clock::now() >= deadline; }

// The time left before `deadline`, rounded up to a microsecond; zero once it passed.
std::chrono::microseconds time_left(Deadline deadline) {
  const auto left = std::chrono::ceil<std::chrono::microseconds>(deadline - Clock::now());
  return std::max(left, std::chrono::microseconds(0));
}

// Sets `fd`'s `option` (SO_RCVTIMEO before a read, SO_SNDTIMEO before a write) to the time left
// before `deadline`. False once it passed (a zero socket timeout would mean "wait for ever").
bool arm(int fd, int option, Deadline deadline) {
  const std::chrono::microseconds left = time_left(deadline);
  if (left.count() <= 0) return false;
  const timeval tv = to_timeval(left);
  return ::setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv) == 0;
}

// hiredis reports a timed-out connect as ETIMEDOUT and a timed-out read as EAGAIN, both through
// errstr (errno may be overwritten by then).
bool is_timeout(const redisContext& context) {
  if (context.err != REDIS_ERR_IO) return false;
  const std::string_view what = context.errstr;
  return what.find("timed out") != std::string_view::npos || what == std::strerror(EAGAIN) ||
         what == std::strerror(EWOULDBLOCK);
}

redisReply* as_reply(void* reply) { return static_cast<redisReply*>(reply); }

// The longest first line of a reply that is read ("+OK", "-ERR ...", "$<length>"): a server
// that sends a longer one is not answering as Redis does.
constexpr std::size_t kMaxReplyLine = 64 << 10;

// The first line of the reply at the start of `reader`'s buffer (without its CRLF), or nullopt
// while the buffer holds no whole first line.
std::optional<std::string_view> first_line(const redisReader& reader) {
  const std::string_view buffered(reader.buf + reader.pos, reader.len - reader.pos);
  const std::size_t end = buffered.find("\r\n");
  if (end == std::string_view::npos) return std::nullopt;
  return buffered.substr(0, end);
}

// Whether `line` (a reply's first line) opens an array. No command the backend sends (GET, SET,
// DEL, AUTH, SELECT) answers with one, so an array is refused before any of it is read: its
// element count and the lengths inside it are never trusted.
bool is_array(std::string_view line) { return !line.empty() && line.front() == '*'; }

// Whether `line` (a reply's first line) declares a bulk value longer than `limit`.
bool declares_more_than(std::string_view line, std::uint64_t limit) {
  if (line.empty() || line.front() != '$') return false;
  std::int64_t length = -1;
  const auto parsed = std::from_chars(line.data() + 1, line.data() + line.size(), length);
  return parsed.ec == std::errc() && parsed.ptr == line.data() + line.size() && length > 0 &&
         static_cast<std::uint64_t>(length) > limit;
}

// Reads more of the reply into `context`'s buffer, waiting at most until `deadline`.
bool read_more(redisContext* context, Deadline deadline) {
  return arm(context->fd, SO_RCVTIMEO, deadline) && redisBufferRead(context) == REDIS_OK;
}

// Sends one command (binary-safe arguments) on `context` and reads its reply, all before
// `deadline`: the reply to free, or nullptr when the connection failed (the reason in
// context->errstr), the deadline passed (then `passed(deadline)`) or the reply is refused unread
// (then `too_big` is set): an array (is_array), a bulk value declared longer than `limit`, or a
// first line longer than kMaxReplyLine. The reply's first line is checked whole before hiredis's
// reader parses any of it (the reader consumes the type byte of a partial reply), so a server that
// drips the length line cannot slip a value past the limit. After nullptr the connection is out of
// step: close it.
void* command(redisContext* context, std::initializer_list<std::string_view> args,
              Deadline deadline, std::uint64_t limit, bool& too_big) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (std::string_view arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  if (redisAppendCommandArgv(context, static_cast<int>(argv.size()), argv.data(), lengths.data()) !=
      REDIS_OK) {
    return nullptr;
  }
  for (int done = 0; !done;) {
    if (!arm(context->fd, SO_SNDTIMEO, deadline) || redisBufferWrite(context, &done) != REDIS_OK) {
      return nullptr;
    }
  }
  std::optional<std::string_view> line;
  while (!(line = first_line(*context->reader))) {
    const redisReader& reader = *context->reader;
    if (reader.len - reader.pos > kMaxReplyLine) {
      too_big = true;
      return nullptr;
    }
    if (!read_more(context, deadline)) return nullptr;
  }
  if (line->size() > kMaxReplyLine || is_array(*line) || declares_more_than(*line, limit)) {
    too_big = true;
    return nullptr;
  }
  void* reply = nullptr;
  for (;;) {
    if (redisGetReplyFromReader(context, &reply) != REDIS_OK) return nullptr;
    if (reply != nullptr) return reply;
    if (!read_more(context, deadline)) return nullptr;
  }
}

// How many idle connections the pool keeps.
constexpr std::size_t kIdleConnections = 4;

}  // namespace

void RedisBackend::ContextFree::operator()(redisContext* context) const { redisFree(context); }
void RedisBackend::ReplyFree::operator()(void* reply) const { freeReplyObject(reply); }

RedisBackend::RedisBackend(const RedisOptions& options, std::uint64_t max_value,
                           AtomicStats& counted)
    : url_(options.url),
      location_(options.location),
      read_only_(options.read_only),
      timeout_(options.timeout),
      ttl_s_(options.ttl_s),
      max_value_(max_value),
      counted_(counted) {}

RedisBackend::~RedisBackend() {
  if (connector_.joinable()) connector_.join();
}

std::string RedisBackend::redis_key(const Key& key) { return "cubby:" + key.hex(); }

void RedisBackend::warn_once(std::atomic<bool>& flag, const std::string& message) {
  if (!flag.exchange(true)) std::fprintf(stderr, "cubby: %s\n", message.c_str());
}

std::string RedisBackend::timed_out() const {
  return "timed out after " + std::to_string(timeout_.count()) +
         " ms (CUBBY_REMOTE_TIMEOUT_MS, the bound of each whole call: connect and reply included)";
}

Failure RedisBackend::connection_failure(const redisContext& context, Clock::time_point deadline,
                                         const std::string& doing) {
  const bool timeout = is_timeout(context) || passed(deadline);
  counted_.add(timeout ? Stat::remote_timeouts : Stat::remote_errors);
  return fail(Errc::io, location_, ": ", doing, timeout ? timed_out() : context.errstr);
}

Result<RedisBackend::Connection> RedisBackend::connect(Clock::time_point deadline) {
  if (passed(deadline)) {
    counted_.add(Stat::remote_timeouts);
    return fail(Errc::io, location_, ": cannot connect: ", timed_out());
  }
  Connection connection(
      redisConnectWithTimeout(url_.host.c_str(), url_.port, to_timeval(time_left(deadline))));
  if (!connection) return fail(Errc::io, "out of memory connecting to ", location_);
  if (connection->err != 0) return connection_failure(*connection, deadline, "cannot connect: ");
  auto handshake = [&](std::initializer_list<std::string_view> args) -> Result<void> {
    bool too_big = false;
    Reply reply(command(connection.get(), args, deadline, kMaxStatusReply, too_big));
    if (too_big) {
      counted_.add(Stat::remote_errors);
      return fail(Errc::io, location_, " answered ", std::string(*args.begin()),
                  " with a line longer than any Redis reply: not a Redis server?");
    }
    if (!reply) return connection_failure(*connection, deadline, "");
    if (as_reply(reply.get())->type == REDIS_REPLY_ERROR) {
      // The server's words (WRONGPASS, NOAUTH, ...) never contain the password.
      const std::string what(as_reply(reply.get())->str, as_reply(reply.get())->len);
      counted_.add(Stat::remote_errors);
      return fail(Errc::io, location_, " refused the connection: ", what);
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
    auto connection = connect(remote_deadline(timeout_));
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

Result<RedisBackend::Connection> RedisBackend::pooled_connection(Clock::time_point deadline) {
  {
    // A connection being opened ahead is waited for rather than opened twice (its connect and
    // handshake have a deadline of their own, before this call's); if it failed, this call is
    // skipped as the breaker it tripped would have skipped it.
    std::unique_lock lock(pool_mutex_);
    const bool waited = connecting_;
    if (!connected_cv_.wait_until(lock, deadline, [&] { return !connecting_; })) {
      counted_.add(Stat::remote_timeouts);
      return fail(Errc::io, location_, ": ", timed_out());
    }
    if (waited && ahead_failed_) {
      counted_.add(Stat::remote_skipped);
      return fail(Errc::io, location_, " failed to connect just now; skipped");
    }
    if (!idle_.empty()) {
      Connection connection = std::move(idle_.back());
      idle_.pop_back();
      return connection;
    }
  }
  return connect(deadline);
}

void RedisBackend::pool(Connection connection) {
  std::lock_guard lock(pool_mutex_);
  if (idle_.size() < kIdleConnections) idle_.push_back(std::move(connection));
}

Result<RedisBackend::Reply> RedisBackend::call(std::initializer_list<std::string_view> args,
                                               std::uint64_t limit) {
  const Clock::time_point deadline = remote_deadline(timeout_);
  auto pooled = pooled_connection(deadline);
  if (!pooled) return std::move(pooled).error();
  Connection connection = std::move(pooled).value();
  bool too_big = false;
  Reply reply(command(connection.get(), args, deadline, limit, too_big));
  // Whenever a call ends early, the connection is out of step (its read buffer holds part of a
  // reply): it is closed, never pooled.
  if (too_big) {
    counted_.add(Stat::remote_rejected);
    return fail(Errc::corrupt, location_, ": the reply to ", std::string(*args.begin()), " ",
                std::string(*(args.begin() + 1)),
                " is over CUBBY_REMOTE_MAX_ENTRY (or not a Redis reply); not read");
  }
  if (!reply) return connection_failure(*connection, deadline, "");
  const redisReader& reader = *connection->reader;
  if (reader.pos < reader.len) {  // more than one reply: out of step
    counted_.add(Stat::remote_errors);
    return fail(Errc::corrupt, location_, " sent more than asked for ", std::string(*args.begin()));
  }
  pool(std::move(connection));
  return reply;
}

Result<std::optional<std::string>> RedisBackend::get(const Key& key) {
  const std::string name = redis_key(key);
  auto called = call({"GET", name}, max_value_);
  if (!called) return std::move(called).error();
  const redisReply& reply = *as_reply(called->get());
  if (reply.type == REDIS_REPLY_NIL) return std::optional<std::string>();
  if (reply.type != REDIS_REPLY_STRING) {
    counted_.add(Stat::remote_errors);
    const std::string what = reply.type == REDIS_REPLY_ERROR ? std::string(reply.str, reply.len)
                                                             : std::string("not a string value");
    return fail(Errc::corrupt, location_, " answered GET ", name, " with ", what);
  }
  counted_.add(Stat::remote_bytes_read, reply.len);
  return std::optional<std::string>(std::string(reply.str, reply.len));
}

Result<void> RedisBackend::put(const Key& key, std::string_view bytes) {
  if (!writable()) {
    return fail(Errc::invalid_argument, location_,
                " is read-only for this process (CUBBY_REMOTE_MODE=read or refused writes)");
  }
  const std::string name = redis_key(key);
  const std::string ttl = std::to_string(ttl_s_);
  auto called = ttl_s_ > 0 ? call({"SET", name, bytes, "EX", ttl}) : call({"SET", name, bytes});
  if (!called) {
    counted_.add(Stat::remote_writes_dropped);
    return std::move(called).error();
  }
  const redisReply& reply = *as_reply(called->get());
  if (reply.type == REDIS_REPLY_ERROR) {
    counted_.add(Stat::remote_writes_dropped);
    const std::string what(reply.str, reply.len);
    if (what.starts_with("NOPERM") || what.starts_with("READONLY") || what.starts_with("NOAUTH")) {
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
  auto called = call({"DEL", name});
  if (!called) return std::move(called).error();
  if (as_reply(called->get())->type == REDIS_REPLY_ERROR) {
    counted_.add(Stat::remote_errors);
    return fail(Errc::corrupt, location_, " refused DEL ", name);
  }
  return {};
}

std::unique_ptr<RemoteTier> open_redis_remote(const RedisOptions& options) {
  auto counted = std::make_shared<AtomicStats>();
  auto backend =
      std::make_unique<RedisBackend>(options, Envelope::max_value(options.max_entry), *counted);
  return std::make_unique<RemoteTier>(std::move(backend), options, std::move(counted));
}

}  // namespace cubby
