// RedisConnection: one byte stream to a server — TCP (the host name resolved within the call's
// deadline), a unix socket, either one optionally under TLS (tls_context.hpp) — whose every wait
// (resolve, connect, TLS handshake, each read and write) ends by a deadline. It moves bytes only:
// Redis replies are read by redis.cpp, HTTP answers by http_answer.cpp (both remotes share this
// layer). No write it makes raises SIGPIPE (plain: send with MSG_NOSIGNAL; TLS: socket_bio.hpp),
// and the host's signal disposition is left as it is.
//
// Why not hiredis's own connections: Debian 12's hiredis (0.14) has no TLS, resolves names with a
// blocking getaddrinfo (a slow resolver held a 500 ms call for 8 s) and cannot bound a TLS
// handshake; hiredis stays the reply parser.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/error.hpp"

typedef struct ssl_st SSL;  // NOLINT(modernize-use-using): OpenSSL's own spelling

namespace cubby {

class TlsContext;

// Where a server listens: a unix socket when `unix_path` is set, else host:port.
struct RedisEndpoint {
  std::string host;  // a name or a numeric address (IPv6 without brackets)
  int port = 6379;
  std::string unix_path;

  bool operator==(const RedisEndpoint&) const = default;
  // "host:port" ("[v6]:port") or the socket's path: for messages.
  std::string name() const;
};

// One resolved address of a host.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
};

// Resolves `host`:`port` to addresses (may block: it is called on a thread of its own). The
// default (nullptr) is getaddrinfo. Tests pass one that hangs.
using RedisResolver =
    std::function<Result<std::vector<SocketAddress>>(const std::string& host, int port)>;

// The addresses of `host`:`port` by `deadline`. A numeric address is converted at once; a name is
// resolved by `resolver` on a detached thread that this call waits for until `deadline` only
// (the thread owns everything it touches, so one still blocked in the resolver after the call,
// or at exit, holds nothing up). Errc::io otherwise; `timed_out` says whether the deadline passed.
Result<std::vector<SocketAddress>> resolve_bounded(const std::string& host, int port,
                                                   std::chrono::steady_clock::time_point deadline,
                                                   const RedisResolver& resolver, bool& timed_out);

class RedisConnection {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects to `endpoint` by `deadline` (every address in turn), then, with `tls`, makes the TLS
  // handshake (the server verified as `tls` says, SNI and host name checked against
  // endpoint.host). Errc::io with what failed; `timed_out` says whether the deadline passed.
  static Result<std::unique_ptr<RedisConnection>> open(const RedisEndpoint& endpoint,
                                                       const TlsContext* tls,
                                                       Clock::time_point deadline,
                                                       const RedisResolver& resolver,
                                                       bool& timed_out);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends all of `bytes` by `deadline`. False on failure: error() says why, timed_out() whether
  // the deadline passed.
  bool send(std::string_view bytes, Clock::time_point deadline);
  // Reads what has arrived (at least one byte, at most `size`) into `buffer` by `deadline`: the
  // count, or 0 on failure (the peer closing included): error(), timed_out(), closed().
  std::size_t receive(char* buffer, std::size_t size, Clock::time_point deadline);

  const std::string& error() const { return error_; }
  bool timed_out() const { return timed_out_; }
  // Whether the last failure is the peer ending the stream cleanly: the end of a plain stream, or
  // TLS's close_notify. An end without close_notify (what a truncating attacker or a crashed
  // server leaves), a reset or any other error is not: what came may be cut short.
  bool closed() const { return closed_; }
  // How many bytes receive() has returned so far.
  std::uint64_t received() const { return received_; }
  // Whether the TLS handshake resumed an earlier session of this context (tls_context.hpp).
  bool resumed() const;

 private:
  explicit RedisConnection(int fd) : fd_(fd) {}
  // Waits until the socket is ready for `events` (POLLIN / POLLOUT), by `deadline`.
  bool wait(short events, Clock::time_point deadline);
  // Makes the TLS handshake on the connected socket with `endpoint`.
  bool handshake(const TlsContext& tls, const RedisEndpoint& endpoint, Clock::time_point deadline);
  // Handles an OpenSSL call's result `ret`: true to retry after waiting for what it needs.
  bool tls_retry(int ret, const char* doing, Clock::time_point deadline);
  bool failed(std::string what, bool timed_out = false, bool closed = false);

  int fd_;
  SSL* ssl_ = nullptr;
  std::string peer_;  // "host:port": whose TLS sessions to resume and keep
  std::string error_;
  bool timed_out_ = false;
  bool closed_ = false;
  std::uint64_t received_ = 0;
};

}  // namespace cubby
