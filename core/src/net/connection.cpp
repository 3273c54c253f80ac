#include "net/connection.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/socket_bio.hpp"
#include "net/tls_context.hpp"

namespace cubby {
namespace {

using Clock = std::chrono::steady_clock;

// Milliseconds left before `deadline`, rounded up (poll's unit); 0 once it passed.
int poll_ms(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

bool is_numeric(const std::string& host) { return numeric_address(host, 0).has_value(); }

}  // namespace

Connection::~Connection() {
  if (ssl_ != nullptr) {
    // Shut down quietly (no close_notify: nothing waits for it), so that OpenSSL keeps the
    // session resumable: freed unshut, it would mark it bad (tls_context.hpp keeps it).
    SSL_set_quiet_shutdown(ssl_, 1);
    SSL_shutdown(ssl_);
    SSL_free(ssl_);
  }
  ::close(fd_);
}

bool Connection::failed(std::string what, bool timed_out, bool closed) {
  error_ = std::move(what);
  timed_out_ = timed_out;
  closed_ = closed;
  return false;
}

bool Connection::wait(short events, Clock::time_point deadline) {
  for (;;) {
    const int ms = poll_ms(deadline);
    if (ms == 0) return failed("timed out", true);
    pollfd fd{fd_, events, 0};
    const int ready = ::poll(&fd, 1, ms);
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return failed(std::strerror(errno));
  }
}

Result<std::unique_ptr<Connection>> Connection::open(const Endpoint& endpoint,
                                                     const TlsContext* tls,
                                                     Clock::time_point deadline,
                                                     const Resolver& resolver, bool& timed_out) {
  timed_out = false;
  std::vector<SocketAddress> addresses;
  if (!endpoint.unix_path.empty()) {
    SocketAddress address;
    auto* un = reinterpret_cast<sockaddr_un*>(&address.storage);
    if (endpoint.unix_path.size() >= sizeof un->sun_path) {
      return fail(Errc::io, "the socket path ", endpoint.unix_path, " is too long");
    }
    un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, endpoint.unix_path.c_str(), endpoint.unix_path.size() + 1);
    address.length = sizeof *un;
    addresses.push_back(address);
  } else {
    auto resolved = resolve_bounded(endpoint.host, endpoint.port, deadline, resolver, timed_out);
    if (!resolved) return std::move(resolved).error();
    addresses = std::move(resolved).value();
  }
  std::string why = "no address";
  for (const SocketAddress& address : addresses) {
    const int fd =
        ::socket(address.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    std::unique_ptr<Connection> connection(new Connection(fd));
    if (address.storage.ss_family != AF_UNIX) {
      const int on = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    }
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) {
      if (errno != EINPROGRESS && errno != EAGAIN) {
        why = std::strerror(errno);
        continue;
      }
      if (!connection->wait(POLLOUT, deadline)) {
        timed_out = connection->timed_out();
        why = connection->error();
        if (timed_out) break;
        continue;
      }
      int error = 0;
      socklen_t length = sizeof error;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      if (error != 0) {
        why = std::strerror(error);
        continue;
      }
    }
    if (tls != nullptr && !connection->handshake(*tls, endpoint, deadline)) {
      timed_out = connection->timed_out();
      return fail(Errc::io, "TLS with ", endpoint.name(), " failed: ", connection->error());
    }
    return connection;
  }
  return fail(Errc::io, "cannot connect to ", endpoint.name(), ": ", why);
}

bool Connection::tls_retry(int ret, const char* doing, Clock::time_point deadline) {
  const int error = SSL_get_error(ssl_, ret);
  if (error == SSL_ERROR_WANT_READ) return wait(POLLIN, deadline);
  if (error == SSL_ERROR_WANT_WRITE) return wait(POLLOUT, deadline);
  if (error == SSL_ERROR_ZERO_RETURN)
    return failed("the server closed the connection", false, true);
  if (error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
    return failed(errno != 0 ? std::strerror(errno)
                             : "the server closed the connection without TLS's close_notify");
  }
  if (error == SSL_ERROR_SSL &&
      ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    ERR_clear_error();
    return failed("the server closed the connection without TLS's close_notify");
  }
  std::string what = tls_error_text(doing);
  const long verified = SSL_get_verify_result(ssl_);
  if (verified != X509_V_OK) {
    what += std::string(" (") + X509_verify_cert_error_string(verified) +
            "; the server's certificate must be signed by a CA in CUBBY_REMOTE_CA_FILE or the "
            "system store, for the URL's host name)";
  }
  return failed(what);
}

bool Connection::handshake(const TlsContext& tls, const Endpoint& endpoint,
                           Clock::time_point deadline) {
  const std::string& host = endpoint.host;
  ERR_clear_error();
  ssl_ = SSL_new(tls.get());
  if (ssl_ == nullptr) return failed(tls_error_text("SSL_new"));
  BIO* bio = socket_bio(fd_);  // writes that never raise SIGPIPE
  if (bio == nullptr) return failed(tls_error_text("cannot make the socket's BIO"));
  SSL_set_bio(ssl_, bio, bio);  // ssl_ owns it
  peer_ = endpoint.name();
  tls.resume(ssl_, peer_);
  if (!host.empty()) {
    if (is_numeric(host)) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
      if (X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) != 1) {
        return failed("cannot check the address " + host);
      }
    } else if (SSL_ctrl(ssl_, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,  // SNI
                        const_cast<char*>(host.c_str())) != 1 ||
               SSL_set1_host(ssl_, host.c_str()) != 1) {
      return failed(tls_error_text("cannot set the host name"));
    }
  }
  for (;;) {
    const int ret = SSL_connect(ssl_);
    if (ret == 1) return true;
    if (!tls_retry(ret, "handshake failed", deadline)) return false;
  }
}

bool Connection::resumed() const { return ssl_ != nullptr && SSL_session_reused(ssl_) == 1; }

bool Connection::send(std::string_view bytes, Clock::time_point deadline) {
  while (!bytes.empty()) {
    if (Clock::now() >= deadline) return failed("timed out", true);
    if (ssl_ != nullptr) {
      ERR_clear_error();
      const int n = SSL_write(ssl_, bytes.data(),
                              static_cast<int>(std::min<std::size_t>(bytes.size(), 1 << 30)));
      if (n > 0) {
        bytes.remove_prefix(static_cast<std::size_t>(n));
      } else if (!tls_retry(n, "write failed", deadline)) {
        return false;
      }
      continue;
    }
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);  // EPIPE, no signal
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!wait(POLLOUT, deadline)) return false;
    } else {
      return failed(std::strerror(errno));
    }
  }
  return true;
}

std::size_t Connection::receive(char* buffer, std::size_t size, Clock::time_point deadline) {
  for (;;) {
    if (Clock::now() >= deadline) return failed("timed out", true);
    if (ssl_ != nullptr) {
      ERR_clear_error();
      const int n = SSL_read(ssl_, buffer, static_cast<int>(std::min<std::size_t>(size, 1 << 30)));
      if (n > 0) {
        received_ += static_cast<std::uint64_t>(n);
        return static_cast<std::size_t>(n);
      }
      if (!tls_retry(n, "read failed", deadline)) return 0;
      continue;
    }
    const ssize_t n = ::recv(fd_, buffer, size, 0);
    if (n > 0) {
      received_ += static_cast<std::uint64_t>(n);
      return static_cast<std::size_t>(n);
    }
    if (n == 0) return failed("the server closed the connection", false, true);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      if (!wait(POLLIN, deadline)) return 0;
    } else {
      return failed(std::strerror(errno));
    }
  }
}

}  // namespace cubby
