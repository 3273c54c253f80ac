// A scripted server on 127.0.0.1, over TLS (a certificate and key the test names) or plain TCP,
// for the faults real servers make only by accident: each connection runs the test's script
// (read a request, answer some bytes) on a thread of its own, then ends as the script chose:
// with TLS's close_notify, without it (what a crashed server or a truncating attacker leaves),
// or with a TCP reset. Its own writes never raise SIGPIPE (cubby's socket_bio, MSG_NOSIGNAL).
#pragma once

#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "loopback.hpp"
#include "net/socket_bio.hpp"

namespace cubby::testing {

class TlsFake {
 public:
  enum class End { close_notify, no_close_notify, reset };

  // One connection, as its script sees it.
  class Peer {
   public:
    // Reads until the request's head (and its Content-Length body) has come: false when the
    // client closed first.
    bool read_http_request() {
      for (;;) {
        const std::size_t head_end = in_.find("\r\n\r\n");
        if (head_end != std::string::npos) {
          std::size_t body = 0;
          if (const auto at = in_.find("Content-Length: ");
              at != std::string::npos && at < head_end)
            body = static_cast<std::size_t>(std::atoll(in_.c_str() + at + 16));
          if (in_.size() >= head_end + 4 + body) {
            in_.erase(0, head_end + 4 + body);
            return true;
          }
        }
        if (!receive()) return false;
      }
    }
    // Reads whatever comes next (at least a byte): false when the client closed first.
    bool receive() {
      char buffer[65536];
      for (;;) {
        if (stopping_) return false;
        const int n = ssl_ != nullptr ? SSL_read(ssl_, buffer, sizeof buffer)
                                      : static_cast<int>(::recv(fd_, buffer, sizeof buffer, 0));
        if (n > 0) {
          in_.append(buffer, static_cast<std::size_t>(n));
          return true;
        }
        const bool again = ssl_ != nullptr ? SSL_get_error(ssl_, n) == SSL_ERROR_WANT_READ
                                           : n < 0 && (errno == EAGAIN || errno == EINTR);
        if (!again) return false;
        pollfd ready{fd_, POLLIN, 0};
        ::poll(&ready, 1, 20);
      }
    }
    void send(std::string_view bytes) {
      while (!bytes.empty()) {
        const int n = ssl_ != nullptr
                          ? SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()))
                          : static_cast<int>(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL));
        if (n <= 0) return;
        bytes.remove_prefix(static_cast<std::size_t>(n));
      }
    }
    // How the connection ends when the script returns (no_close_notify unless set).
    void end_with(End end) { end_ = end; }
    // Which connection of the server this is: 0 for the first.
    int index() const { return index_; }

   private:
    friend class TlsFake;
    Peer(int fd, SSL* ssl, int index, const std::atomic<bool>& stopping)
        : fd_(fd), ssl_(ssl), index_(index), stopping_(stopping) {}
    int fd_;
    SSL* ssl_;
    int index_;
    const std::atomic<bool>& stopping_;
    std::string in_;
    End end_ = End::no_close_notify;
  };
  using Script = std::function<void(Peer&)>;

  // Serves every connection with `script`, over TLS with `cert_file` (PEM chain) and `key_file`,
  // or plain TCP when both are empty. Throws std::runtime_error when it cannot.
  TlsFake(const std::string& cert_file, const std::string& key_file, Script script)
      : script_(std::move(script)) {
    if (!cert_file.empty()) {
      context_ = SSL_CTX_new(TLS_server_method());
      if (context_ == nullptr ||
          SSL_CTX_use_certificate_chain_file(context_, cert_file.c_str()) != 1 ||
          SSL_CTX_use_PrivateKey_file(context_, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
        throw std::runtime_error("TlsFake: cannot use " + cert_file + " and " + key_file);
      }
    }
    listener_ = listen_loopback(port_);
    if (listener_ < 0) throw std::runtime_error("TlsFake: cannot listen on 127.0.0.1");
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~TlsFake() {
    stopping_ = true;
    if (acceptor_.joinable()) acceptor_.join();
    for (std::thread& thread : servers_) thread.join();
    ::close(listener_);
    if (context_ != nullptr) SSL_CTX_free(context_);
  }
  TlsFake(const TlsFake&) = delete;
  TlsFake& operator=(const TlsFake&) = delete;

  int port() const { return port_; }
  int connections() const { return connections_.load(); }

 private:
  void accept_loop() {
    while (!stopping_) {
      pollfd ready{listener_, POLLIN, 0};
      if (::poll(&ready, 1, 20) <= 0) continue;
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) continue;
      const int index = connections_++;
      servers_.emplace_back([this, fd, index] { serve(fd, index); });
    }
  }

  void serve(int fd, int index) {
    SSL* ssl = nullptr;
    if (context_ != nullptr) {
      ssl = SSL_new(context_);
      BIO* bio = socket_bio(fd);
      SSL_set_bio(ssl, bio, bio);
      for (;;) {  // the handshake
        const int ret = SSL_accept(ssl);
        if (ret == 1) break;
        const int error = SSL_get_error(ssl, ret);
        if (stopping_ || (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE)) {
          SSL_free(ssl);
          ::close(fd);
          return;
        }
        pollfd ready{fd, static_cast<short>(error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
        ::poll(&ready, 1, 20);
      }
    }
    Peer peer(fd, ssl, index, stopping_);
    script_(peer);
    if (ssl != nullptr) {
      if (peer.end_ == End::close_notify) SSL_shutdown(ssl);  // sends close_notify
      SSL_free(ssl);                                          // unshut otherwise: nothing sent
    }
    if (peer.end_ == End::reset) {
      const linger abort{1, 0};  // close() sends RST
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    }
    ::close(fd);
  }

  Script script_;
  SSL_CTX* context_ = nullptr;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  std::vector<std::thread> servers_;  // the acceptor's, until the destructor joined it
};

}  // namespace cubby::testing
