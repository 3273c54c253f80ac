// Connection: one byte stream to a server — TCP (the host name resolved within the call's
// deadline: resolver.hpp), a unix socket, either one optionally under TLS (tls_context.hpp) — whose
// every wait (resolve, connect, TLS handshake, each read and write) ends by a deadline. It moves
// bytes only: Redis replies are read by storage/remote/redis/, HTTP answers by
// storage/remote/http/ (both remotes share this layer). No write it makes raises SIGPIPE (plain:
// send with MSG_NOSIGNAL; TLS: socket_bio.hpp), and the host's signal disposition is left as it is.
//
// Why not hiredis's own connections: Debian 12's hiredis (0.14) has no TLS, resolves names with a
// blocking getaddrinfo (a slow resolver held a 500 ms call for 8 s) and cannot bound a TLS
// handshake; hiredis stays the reply parser.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cubby/error.hpp"
#include "net/endpoint.hpp"
#include "net/resolver.hpp"

typedef struct ssl_st SSL;  // NOLINT(modernize-use-using): OpenSSL's own spelling

namespace cubby {

class TlsContext;

class Connection {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects to `endpoint` by `deadline` (every address in turn), then, with `tls`, makes the TLS
  // handshake (the server verified as `tls` says, SNI and host name checked against
  // endpoint.host). Errc::io with what failed; `timed_out` says whether the deadline passed.
  static Result<std::unique_ptr<Connection>> open(const Endpoint& endpoint, const TlsContext* tls,
                                                  Clock::time_point deadline,
                                                  const Resolver& resolver, bool& timed_out);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

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
  explicit Connection(int fd) : fd_(fd) {}
  // Waits until the socket is ready for `events` (POLLIN / POLLOUT), by `deadline`.
  bool wait(short events, Clock::time_point deadline);
  // Makes the TLS handshake on the connected socket with `endpoint`.
  bool handshake(const TlsContext& tls, const Endpoint& endpoint, Clock::time_point deadline);
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
