// A fake HTTP server on 127.0.0.1 for the HTTP remote's fault tests: it reads each request (head
// and Content-Length body) and answers by its method with a scripted Answer — some bytes at once,
// then (if any) the `drip` bytes one at a time, one every `interval`, cycled for ever. Connections
// are kept open between requests (keep-alive), so a test can count how many the client opened,
// unless the answer says `close` (then the server closes the connection after it, whatever the
// answer's headers say).
// Stopping the server (stop() or the destructor) closes every connection, so a client still
// waiting for a dripped answer sees the end of the stream.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "loopback.hpp"

namespace cubby::testing {

class HttpFake {
 public:
  struct Answer {
    std::string now;     // sent at once (status line, headers, maybe a body)
    std::string drip;    // then one byte of it every interval, cycled for ever; empty: none
    bool close = false;  // the connection is closed after `now`
  };

  // An answer with `status` and `body` (its Content-Length declared).
  static Answer answer(int status, const std::string& body = {}) {
    return {"HTTP/1.1 " + std::to_string(status) +
                " Fake\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body,
            {}};
  }

  // `answers` by method ("GET", "PUT", "HEAD"); other methods get 405. Throws std::runtime_error
  // when no socket can be opened.
  HttpFake(std::map<std::string, Answer> answers, std::chrono::milliseconds interval)
      : answers_(std::move(answers)), interval_(interval) {
    listener_ = listen_loopback(port_);
    if (listener_ < 0) throw std::runtime_error("HttpFake: cannot listen on 127.0.0.1");
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~HttpFake() { stop(); }
  HttpFake(const HttpFake&) = delete;
  HttpFake& operator=(const HttpFake&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // How many requests with `method` have been received so far.
  int received(const std::string& method) const {
    std::lock_guard lock(mutex_);
    const auto found = received_.find(method);
    return found == received_.end() ? 0 : found->second;
  }
  int connections() const { return connections_.load(); }
  // The last request's head (request line and headers).
  std::string last_head() const {
    std::lock_guard lock(mutex_);
    return last_head_;
  }

  void stop() {
    if (stopping_.exchange(true)) return;
    if (acceptor_.joinable()) acceptor_.join();
    for (std::thread& thread : servers_) thread.join();
    servers_.clear();
    ::close(listener_);
  }

 private:
  using Clock = std::chrono::steady_clock;

  bool readable(int fd) const {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 5) > 0;
  }

  void accept_loop() {
    while (!stopping_) {
      if (!readable(listener_)) continue;
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++connections_;
      servers_.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    std::string in;
    while (!stopping_) {
      const std::size_t head_end = in.find("\r\n\r\n");
      if (head_end == std::string::npos) {
        if (!read_more(fd, in)) break;
        continue;
      }
      const std::string head = in.substr(0, head_end);
      std::size_t body = 0;
      if (const auto at = head.find("Content-Length: "); at != std::string::npos) {
        body = static_cast<std::size_t>(std::atoll(head.c_str() + at + 16));
      }
      if (in.size() < head_end + 4 + body) {
        if (!read_more(fd, in)) break;
        continue;
      }
      in.erase(0, head_end + 4 + body);
      const std::string method = head.substr(0, head.find(' '));
      {
        std::lock_guard lock(mutex_);
        ++received_[method];
        last_head_ = head;
      }
      const auto found = answers_.find(method);
      const Answer answer = found == answers_.end() ? HttpFake::answer(405) : found->second;
      send_all(fd, answer.now);
      if (answer.close) break;
      if (!answer.drip.empty()) {
        for (std::size_t next = 0; !stopping_; next = (next + 1) % answer.drip.size()) {
          std::this_thread::sleep_for(interval_);
          if (::send(fd, answer.drip.data() + next, 1, MSG_NOSIGNAL) != 1) break;
        }
        break;
      }
    }
    ::close(fd);
  }

  bool read_more(int fd, std::string& in) {
    while (!stopping_ && !readable(fd)) {
    }
    char buffer[65536];
    const ssize_t n = stopping_ ? 0 : ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return false;
    in.append(buffer, static_cast<std::size_t>(n));
    return true;
  }

  static void send_all(int fd, const std::string& bytes) {
    for (std::size_t sent = 0; sent < bytes.size();) {
      const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<std::size_t>(n);
    }
  }

  const std::map<std::string, Answer> answers_;
  const std::chrono::milliseconds interval_;
  int listener_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> servers_;  // the acceptor's, until stop() joined it
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  mutable std::mutex mutex_;
  std::map<std::string, int> received_;
  std::string last_head_;
};

}  // namespace cubby::testing
