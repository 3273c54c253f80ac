#include "storage/remote/redis.hpp"

#include <hiredis/hiredis.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string_view>
#include <system_error>

#include "storage/remote/sign.hpp"
#include "storage/remote/compress.hpp"

namespace cubby {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t now_ns() { return Clock::now().time_since_epoch().count(); }

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

// Sends one command (binary-safe arguments) on `context` and reads its reply, all before
// `deadline`: the reply to free, or nullptr when the connection failed (the reason in
// context->errstr) or the deadline passed (then `passed(deadline)`). After nullptr the
// connection is out of step: close it.
void* command(redisContext* context, std::initializer_list<std::string_view> args,
              Deadline deadline) {
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
  void* reply = nullptr;
  for (;;) {
    if (redisGetReplyFromReader(context, &reply) != REDIS_OK) return nullptr;
    if (reply != nullptr) return reply;
    if (!arm(context->fd, SO_RCVTIMEO, deadline) || redisBufferRead(context) != REDIS_OK) {
      return nullptr;
    }
  }
}

// How many idle connections the pool keeps.
constexpr std::size_t kIdleConnections = 4;

}  // namespace

void RedisTier::ContextFree::operator()(redisContext* context) const { redisFree(context); }
void RedisTier::ReplyFree::operator()(void* reply) const { freeReplyObject(reply); }

RedisTier::RedisTier(RedisOptions options) : options_(std::move(options)) {}

RedisTier::~RedisTier() {
  if (connector_.joinable()) connector_.join();
  drain(std::max<std::chrono::milliseconds>(std::chrono::seconds(1), 4 * options_.timeout));
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

std::string RedisTier::redis_key(const Key& key) { return "cubby:" + key.hex(); }

void RedisTier::warn_once(std::atomic<bool>& flag, const std::string& message) {
  if (!flag.exchange(true)) std::fprintf(stderr, "cubby: %s\n", message.c_str());
}

std::string RedisTier::timed_out() const {
  return "timed out after " + std::to_string(options_.timeout.count()) +
         " ms (CUBBY_REMOTE_TIMEOUT_MS, the bound of each whole call: connect and reply included)";
}

void RedisTier::note_failure(bool timeout, const std::string& what) {
  counted_.add(timeout ? Stat::remote_timeouts : Stat::remote_errors);
  open_until_ns_.store(now_ns() + std::chrono::nanoseconds(options_.backoff).count());
  warn_once(warned_failure_,
            "the remote store " + options_.location + " failed (" + what +
                "); kernels are compiled or read locally instead, and the remote is skipped for " +
                std::to_string(options_.backoff.count()) +
                " ms after each failure (CUBBY_REMOTE_BACKOFF_MS). This warning is shown once; "
                "`cubby stats` counts remote errors and timeouts");
}

Result<RedisTier::Connection> RedisTier::connect(Clock::time_point deadline) {
  if (passed(deadline)) {
    note_failure(true, timed_out());
    return fail(Errc::io, "cannot connect to ", options_.location, ": ", timed_out());
  }
  Connection connection(redisConnectWithTimeout(options_.url.host.c_str(), options_.url.port,
                                                to_timeval(time_left(deadline))));
  if (!connection) return fail(Errc::io, "out of memory connecting to ", options_.location);
  if (connection->err != 0) {
    const bool timeout = is_timeout(*connection) || passed(deadline);
    const std::string what = timeout ? timed_out() : connection->errstr;
    note_failure(timeout, "cannot connect: " + what);
    return fail(Errc::io, "cannot connect to ", options_.location, ": ", what);
  }
  auto handshake = [&](std::initializer_list<std::string_view> args) -> Result<void> {
    Reply reply(command(connection.get(), args, deadline));
    if (!reply) {
      const bool timeout = is_timeout(*connection) || passed(deadline);
      const std::string what = timeout ? timed_out() : connection->errstr;
      note_failure(timeout, what);
      return fail(Errc::io, options_.location, ": ", what);
    }
    if (as_reply(reply.get())->type == REDIS_REPLY_ERROR) {
      // The server's words (WRONGPASS, NOAUTH, ...) never contain the password.
      const std::string what(as_reply(reply.get())->str, as_reply(reply.get())->len);
      note_failure(false, what);
      return fail(Errc::io, options_.location, " refused the connection: ", what);
    }
    return {};
  };
  if (!options_.url.password.empty()) {
    auto authed = options_.url.user.empty()
                      ? handshake({"AUTH", options_.url.password})
                      : handshake({"AUTH", options_.url.user, options_.url.password});
    if (!authed) return std::move(authed).error();
  }
  if (options_.url.db != 0) {
    const std::string db = std::to_string(options_.url.db);
    if (auto selected = handshake({"SELECT", db}); !selected) return std::move(selected).error();
  }
  return connection;
}

void RedisTier::connect_ahead() {
  {
    std::lock_guard lock(pool_mutex_);
    if (connecting_ || connector_.joinable() || !idle_.empty()) return;  // once per tier
    connecting_ = true;
  }
  auto run = [this] {
    // Under the breaker like any call (a failure counts and opens it, as a lookup's would).
    auto connection = now_ns() < open_until_ns_.load()
                          ? Result<Connection>(fail(Errc::io, "skipped"))
                          : connect(Clock::now() + options_.timeout);
    std::lock_guard lock(pool_mutex_);
    if (connection && idle_.size() < kIdleConnections)
      idle_.push_back(std::move(connection).value());
    connecting_ = false;
    connected_cv_.notify_all();
  };
  try {
    connector_ = std::thread(run);
  } catch (const std::system_error&) {  // no thread: the first lookup connects, as without this
    std::lock_guard lock(pool_mutex_);
    connecting_ = false;
  }
}

Result<RedisTier::Connection> RedisTier::pooled_connection(Clock::time_point deadline) {
  {
    // A connection being opened ahead is waited for rather than opened twice (its connect and
    // handshake have a deadline of their own, before this call's); its failure opens the breaker
    // checked next.
    std::unique_lock lock(pool_mutex_);
    if (!connected_cv_.wait_until(lock, deadline, [&] { return !connecting_; })) {
      counted_.add(Stat::remote_timeouts);
      return fail(Errc::io, options_.location, ": ", timed_out());
    }
    if (now_ns() < open_until_ns_.load()) {
      counted_.add(Stat::remote_skipped);
      return fail(Errc::io, options_.location, " failed recently; skipped for now");
    }
    if (!idle_.empty()) {
      Connection connection = std::move(idle_.back());
      idle_.pop_back();
      return connection;
    }
  }
  return connect(deadline);
}

void RedisTier::pool(Connection connection) {
  open_until_ns_.store(0);
  std::lock_guard lock(pool_mutex_);
  if (idle_.size() < kIdleConnections) idle_.push_back(std::move(connection));
}

Result<RedisTier::Reply> RedisTier::call(std::initializer_list<std::string_view> args,
                                         Clock::time_point cap) {
  const Clock::time_point deadline = std::min(Clock::now() + options_.timeout, cap);
  auto pooled = pooled_connection(deadline);
  if (!pooled) return std::move(pooled).error();
  Connection connection = std::move(pooled).value();
  Reply reply(command(connection.get(), args, deadline));
  if (!reply) {  // the connection is unusable now (its read buffer is undefined): drop it
    const bool timeout = is_timeout(*connection) || passed(deadline);
    const std::string what = timeout ? timed_out() : connection->errstr;
    note_failure(timeout, what);
    return fail(Errc::io, options_.location, ": ", what);
  }
  pool(std::move(connection));
  return reply;
}

Result<std::optional<std::string>> RedisTier::get_value(const std::string& name,
                                                        std::uint64_t limit) {
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  auto pooled = pooled_connection(deadline);
  if (!pooled) return std::move(pooled).error();
  Connection connection = std::move(pooled).value();
  redisContext& context = *connection;
  // A connection whose reader holds unparsed bytes is out of step with the server: not used.
  if (context.reader != nullptr && context.reader->pos < context.reader->len) {
    counted_.add(Stat::remote_errors);
    return fail(Errc::io, options_.location, ": a pooled connection was out of step; dropped");
  }
  // Any failure below leaves the connection out of step: it is dropped (closed), never pooled.
  auto io_failure = [&](int error) -> Failure {
    const bool timeout = error == EAGAIN || error == EWOULDBLOCK || passed(deadline);
    const std::string what = timeout      ? timed_out()
                             : error == 0 ? std::string("connection closed by the server")
                                          : std::string(std::strerror(error));
    note_failure(timeout, what);
    return fail(Errc::io, options_.location, ": GET ", name, ": ", what);
  };
  const char* argv[] = {"GET", name.c_str()};
  const std::size_t lengths[] = {3, name.size()};
  if (redisAppendCommandArgv(&context, 2, argv, lengths) != REDIS_OK) {
    return fail(Errc::io, options_.location, ": out of memory");
  }
  for (int done = 0; !done;) {
    if (!arm(context.fd, SO_SNDTIMEO, deadline) || redisBufferWrite(&context, &done) != REDIS_OK) {
      const bool timeout = is_timeout(context) || passed(deadline);
      const std::string what = timeout ? timed_out() : context.errstr;
      note_failure(timeout, what);
      return fail(Errc::io, options_.location, ": ", what);
    }
  }
  // Reads into `buffer` before the deadline: -1 once at least one byte came (`got` of them), else
  // 0 for the end of the stream or an errno (EAGAIN: the deadline passed).
  auto read_some = [&](char* buffer, std::size_t room, std::size_t& got) -> int {
    for (;;) {
      if (!arm(context.fd, SO_RCVTIMEO, deadline)) return EAGAIN;
      const ssize_t n = ::read(context.fd, buffer, room);
      if (n > 0) {
        got = static_cast<std::size_t>(n);
        return -1;
      }
      if (n < 0 && errno == EINTR) continue;
      return n == 0 ? 0 : errno;
    }
  };
  // The reply's first line ("$<length>\r\n", "$-1\r\n" or "-ERR ...\r\n"), and what followed it.
  char head[1 << 16];
  std::size_t filled = 0;
  std::size_t line_end = std::string_view::npos;
  while (line_end == std::string_view::npos) {
    if (filled == sizeof head) {
      counted_.add(Stat::remote_errors);
      return fail(Errc::io, options_.location, " answered GET ", name, " with no reply line");
    }
    std::size_t got = 0;
    if (const int error = read_some(head + filled, sizeof head - filled, got); error >= 0) {
      return io_failure(error);
    }
    filled += got;
    line_end = std::string_view(head, filled).find("\r\n");
  }
  const std::string_view line(head, line_end);
  if (line.starts_with('-')) {
    counted_.add(Stat::remote_errors);
    return fail(Errc::io, options_.location, " answered GET ", name, " with ",
                std::string(line.substr(1)));
  }
  std::int64_t length = -2;
  const auto parsed = std::from_chars(line.data() + 1, line.data() + line.size(), length);
  if (!line.starts_with('$') || parsed.ec != std::errc() ||
      parsed.ptr != line.data() + line.size() || length < -1) {
    counted_.add(Stat::remote_errors);
    return fail(Errc::io, options_.location, " answered GET ", name, " with not a string value");
  }
  std::size_t rest = line_end + 2;  // bytes of `head` after the line
  if (length == -1) {
    if (rest != filled) {  // more than one reply: out of step
      counted_.add(Stat::remote_errors);
      return fail(Errc::io, options_.location, " sent more than asked for GET ", name);
    }
    pool(std::move(connection));
    return std::optional<std::string>();
  }
  if (static_cast<std::uint64_t>(length) > limit) {  // dropped unread: no allocation for it
    counted_.add(Stat::remote_rejected);
    return fail(Errc::corrupt, "remote value ", name, " is ", std::to_string(length),
                " bytes, over CUBBY_REMOTE_MAX_ENTRY");
  }
  // The value and its "\r\n" terminator, read straight into the string.
  const std::size_t total = static_cast<std::size_t>(length) + 2;
  std::string value;
  value.resize(total);
  std::size_t have = std::min(filled - rest, total);
  std::memcpy(value.data(), head + rest, have);
  if (filled - rest > total) {  // more than one reply: out of step
    counted_.add(Stat::remote_errors);
    return fail(Errc::io, options_.location, " sent more than asked for GET ", name);
  }
  while (have < total) {
    std::size_t got = 0;
    if (const int error = read_some(value.data() + have, total - have, got); error >= 0) {
      return io_failure(error);
    }
    have += got;
  }
  if (value[total - 2] != '\r' || value[total - 1] != '\n') {
    counted_.add(Stat::remote_errors);
    return fail(Errc::io, options_.location, " answered GET ", name, " with a malformed value");
  }
  value.resize(total - 2);
  pool(std::move(connection));
  return std::optional<std::string>(std::move(value));
}

Result<std::optional<std::string>> RedisTier::get(const Key& key) {
  const std::string name = redis_key(key);
  // A compressed value is never bigger than the entry (else it is stored uncompressed).
  const std::uint64_t limit = options_.max_entry + kSignatureMagic.size() + kSignatureBytes;
  auto got = get_value(name, limit);
  if (!got) return std::move(got).error();
  if (!got->has_value()) return std::optional<std::string>();
  std::string& raw = **got;
  counted_.add(Stat::remote_bytes_read, raw.size());
  std::string_view value(raw);
  auto reject = [&](Failure why) -> Failure {
    counted_.add(Stat::remote_rejected);
    warn_once(warned_rejected_, "rejected remote entry " + key.hex() + " from " +
                                    options_.location + ": " + why.message +
                                    " (counted as rejected in `cubby stats`; shown once)");
    return why;
  };
  if (!options_.secret.empty()) {
    auto opened = open_signed(options_.secret, key, value);
    if (!opened) return reject(std::move(opened).error());
    value = *opened;
  } else if (is_signed(value) && value.size() >= kSignatureMagic.size() + kSignatureBytes) {
    // Signed by a writer with a secret this reader lacks: the entry itself is still verified
    // (checksum, format, symbols) by the orchestrator.
    value.remove_prefix(kSignatureMagic.size() + kSignatureBytes);
  }
  if (is_compressed(value)) {
    auto entry = decompress_value(value, options_.max_entry);
    if (!entry) return reject(std::move(entry).error());
    return std::optional<std::string>(std::move(entry).value());
  }
  // `value` is a suffix of `raw`: the envelope (if any) is cut off in place.
  raw.erase(0, raw.size() - value.size());
  return std::move(*got);
}

Result<void> RedisTier::put(const Key& key, std::string_view bytes) {
  return write(key, bytes, Clock::time_point::max());
}

Result<void> RedisTier::write(const Key& key, std::string_view bytes, Clock::time_point cap) {
  if (options_.read_only || writes_refused_.load()) {
    return fail(Errc::invalid_argument, options_.location,
                " is read-only for this process (CUBBY_REMOTE_MODE=read or refused writes)");
  }
  if (bytes.size() > options_.max_entry) {
    counted_.add(Stat::remote_writes_dropped);
    return fail(Errc::invalid_argument, "entry ", key.hex(), " is ", std::to_string(bytes.size()),
                " bytes, over CUBBY_REMOTE_MAX_ENTRY; not sent to the remote");
  }
  const std::string compressed = options_.compress ? compress_value(bytes) : std::string();
  const std::string_view payload = options_.compress ? std::string_view(compressed) : bytes;
  const std::string sealed =
      options_.secret.empty() ? std::string() : seal_signed(options_.secret, key, payload);
  const std::string_view value = options_.secret.empty() ? payload : std::string_view(sealed);
  const std::string name = redis_key(key);
  const std::string ttl = std::to_string(options_.ttl_s);
  auto called = options_.ttl_s > 0 ? call({"SET", name, value, "EX", ttl}, cap)
                                   : call({"SET", name, value}, cap);
  if (!called) {
    counted_.add(Stat::remote_writes_dropped);
    return std::move(called).error();
  }
  const redisReply* reply = as_reply(called->get());
  if (reply->type == REDIS_REPLY_ERROR) {
    counted_.add(Stat::remote_writes_dropped);
    const std::string what(reply->str, reply->len);
    if (what.starts_with("NOPERM") || what.starts_with("READONLY") || what.starts_with("NOAUTH")) {
      writes_refused_ = true;
      warn_once(warned_refused_, options_.location + " refused a write (" + what +
                                     "); this process only reads it from now on. Set "
                                     "CUBBY_REMOTE_MODE=read for jobs whose Redis user cannot "
                                     "write");
    } else {
      counted_.add(Stat::remote_errors);
    }
    return fail(Errc::io, options_.location, " refused SET: ", what);
  }
  counted_.add(Stat::remote_writes);
  counted_.add(Stat::remote_bytes_written, value.size());
  return {};
}

Result<void> RedisTier::remove(const Key& key) {
  if (options_.read_only) {
    return fail(Errc::invalid_argument, options_.location, " is read-only (CUBBY_REMOTE_MODE)");
  }
  const std::string name = redis_key(key);
  auto called = call({"DEL", name}, Clock::time_point::max());
  if (!called) return std::move(called).error();
  if (as_reply(called->get())->type == REDIS_REPLY_ERROR) {
    counted_.add(Stat::remote_errors);
    return fail(Errc::io, options_.location, " refused DEL ", name);
  }
  return {};
}

void RedisTier::put_later(const Key& key, std::string bytes) {
  if (options_.read_only || writes_refused_.load()) return;
  std::unique_lock lock(queue_mutex_);
  if (stopping_ || queue_.size() >= options_.queue_entries ||
      queued_bytes_ + bytes.size() > options_.queue_bytes) {
    counted_.add(Stat::remote_writes_dropped);
    return;
  }
  queued_bytes_ += bytes.size();
  queue_.emplace_back(key, std::move(bytes));
  if (!writer_.joinable()) writer_ = std::thread([this] { writer_loop(); });
  lock.unlock();
  queue_cv_.notify_one();
}

void RedisTier::writer_loop() {
  std::unique_lock lock(queue_mutex_);
  for (;;) {
    queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping
    auto [key, bytes] = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= bytes.size();
    writing_ = true;
    const Clock::time_point cap = drain_until_;
    lock.unlock();
    (void)write(key, bytes, cap);  // counted inside; a failure is only a missed share
    lock.lock();
    writing_ = false;
    idle_cv_.notify_all();
  }
}

void RedisTier::drain(std::chrono::milliseconds bound) {
  std::unique_lock lock(queue_mutex_);
  const Clock::time_point until = Clock::now() + bound;
  // Writes started from now on end by `until` too, so that the write in flight when the bound
  // passes ends with it (the destructor's join waits for no more than that).
  drain_until_ = std::min(drain_until_, until);
  idle_cv_.wait_until(lock, until, [&] { return queue_.empty() && !writing_; });
  counted_.add(Stat::remote_writes_dropped, queue_.size());
  queue_.clear();
  queued_bytes_ = 0;
  drain_until_ = Clock::time_point::max();
}

Stats RedisTier::counters() const { return counted_.snapshot(); }

std::string redact_remote_url(std::string_view url) { return redact_redis_url(url); }

std::unique_ptr<RemoteTier> open_remote_tier(const Config& config) {
  if (config.remote_url.empty()) return nullptr;
  RedisOptions options;
  options.location = redact_redis_url(config.remote_url);
  auto url = parse_redis_url(config.remote_url);
  if (!url) {
    std::fprintf(stderr, "cubby: CUBBY_REMOTE (%s) is not usable: %s; running without a remote\n",
                 options.location.c_str(), url.error().message.c_str());
    return nullptr;
  }
  options.url = std::move(url).value();
  options.secret = config.remote_secret;
  options.read_only = config.remote_read_only || config.read_only;
  options.timeout = std::chrono::milliseconds(config.remote_timeout_ms);
  options.backoff = std::chrono::milliseconds(config.remote_backoff_ms);
  options.max_entry = config.remote_max_entry;
  options.ttl_s = std::min(config.remote_ttl_s, kMaxRemoteTtlS);
  if (config.remote_ttl_s > kMaxRemoteTtlS) {  // a Config made in code (from_env refuses it)
    std::fprintf(stderr,
                 "cubby: remote_ttl_s %llu is over what Redis accepts; using %llu s (set 0 for "
                 "remote entries that never expire)\n",
                 static_cast<unsigned long long>(config.remote_ttl_s),
                 static_cast<unsigned long long>(kMaxRemoteTtlS));
  }
  options.compress = config.remote_compress;
  return std::make_unique<RedisTier>(std::move(options));
}

}  // namespace cubby
