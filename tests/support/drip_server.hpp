// A fake Redis on 127.0.0.1 that drips its answers, for the remote tier's deadline tests: it reads
// RESP commands and answers each by its name with a scripted Answer — some bytes at once, then
// (if any) the `drip` bytes one at a time, one every `interval`, cycled for ever. A connection
// being dripped reads and ignores anything more it is sent. Stopping the server (stop() or the
// destructor) closes every connection, so a client still waiting for a dripped reply sees the end
// of the stream: a test can always end a call that would otherwise hang.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "loopback.hpp"

namespace cubby::testing {

class DripServer {
 public:
  struct Answer {
    std::string now;   // sent at once
    std::string drip;  // then one byte of it every interval, cycled for ever; empty: none
  };

  // `answers` by command name in capitals ("GET", "SET", "AUTH"); other commands get an error
  // reply. Throws std::runtime_error when no socket can be opened.
  DripServer(std::map<std::string, Answer> answers, std::chrono::milliseconds interval)
      : answers_(std::move(answers)), interval_(interval) {
    listener_ = listen_loopback(port_, SOCK_NONBLOCK);
    if (listener_ < 0) throw std::runtime_error("DripServer: cannot listen on 127.0.0.1");
    thread_ = std::thread([this] { serve(); });
  }
  ~DripServer() { stop(); }
  DripServer(const DripServer&) = delete;
  DripServer& operator=(const DripServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

  // How many commands named `name` have been received so far.
  int received(const std::string& name) const {
    std::lock_guard lock(mutex_);
    const auto found = received_.find(name);
    return found == received_.end() ? 0 : found->second;
  }
  // Waits until a command named `name` has been received (true), at most `bound` (false).
  bool await(const std::string& name, std::chrono::milliseconds bound) const {
    const auto until = std::chrono::steady_clock::now() + bound;
    while (received(name) == 0) {
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

  // Stops serving and closes every connection (idempotent).
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
    for (Client& client : clients_) ::close(client.fd);
    clients_.clear();
    if (listener_ >= 0) ::close(listener_);
    listener_ = -1;
  }

 private:
  using Clock = std::chrono::steady_clock;

  struct Client {
    int fd = -1;
    std::string in;             // bytes of commands not yet complete
    const Answer* dripping{};   // the answer being dripped, if any
    std::size_t next_drip = 0;  // its next byte
    Clock::time_point next_time;
  };

  // Takes one whole RESP command (an array of bulk strings) off the front of `in`; nullopt while
  // it is incomplete (or not RESP).
  static std::optional<std::vector<std::string>> take_command(std::string& in) {
    std::size_t at = 0;
    auto line = [&]() -> std::optional<long long> {
      const auto end = in.find("\r\n", at);
      if (end == std::string::npos || end == at) return std::nullopt;
      const long long value = std::atoll(in.c_str() + at + 1);
      at = end + 2;
      return value;
    };
    if (in.empty() || in[0] != '*') return std::nullopt;
    const auto count = line();
    if (!count) return std::nullopt;
    std::vector<std::string> args;
    for (long long i = 0; i < *count; ++i) {
      if (at >= in.size() || in[at] != '$') return std::nullopt;
      const auto size = line();
      if (!size || in.size() < at + static_cast<std::size_t>(*size) + 2) return std::nullopt;
      args.push_back(in.substr(at, static_cast<std::size_t>(*size)));
      at += static_cast<std::size_t>(*size) + 2;
    }
    in.erase(0, at);
    return args;
  }

  static void send_all(int fd, std::string_view bytes) {
    if (!bytes.empty()) (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  void answer(Client& client, const std::vector<std::string>& args) {
    std::string name = args.empty() ? std::string() : args[0];
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    {
      std::lock_guard lock(mutex_);
      ++received_[name];
    }
    const auto found = answers_.find(name);
    if (found == answers_.end()) {
      send_all(client.fd, "-ERR the drip server does not know " + name + "\r\n");
      return;
    }
    send_all(client.fd, found->second.now);
    if (!found->second.drip.empty()) {
      client.dripping = &found->second;
      client.next_time = Clock::now() + interval_;
    }
  }

  void serve() {
    while (!stopping_) {
      std::vector<pollfd> fds{{listener_, POLLIN, 0}};
      for (const Client& client : clients_) fds.push_back({client.fd, POLLIN, 0});
      ::poll(fds.data(), fds.size(), 5);
      if (fds[0].revents & POLLIN) {
        const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) clients_.push_back(Client{fd, {}, nullptr, 0, {}});
      }
      for (std::size_t i = 0; i < clients_.size(); ++i) {
        Client& client = clients_[i];
        if (i + 1 < fds.size() && (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) {
          char buffer[65536];
          const ssize_t n = ::recv(client.fd, buffer, sizeof buffer, MSG_DONTWAIT);
          if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {  // closed by the client
            ::close(client.fd);
            client.fd = -1;
            continue;
          }
          if (n > 0 && client.dripping == nullptr) {
            client.in.append(buffer, static_cast<std::size_t>(n));
            while (client.dripping == nullptr) {
              auto args = take_command(client.in);
              if (!args) break;
              answer(client, *args);
            }
          }
        }
        if (client.dripping != nullptr && Clock::now() >= client.next_time) {
          const std::string& drip = client.dripping->drip;
          send_all(client.fd, std::string_view(drip).substr(client.next_drip, 1));
          client.next_drip = (client.next_drip + 1) % drip.size();
          client.next_time += interval_;
        }
      }
      std::erase_if(clients_, [](const Client& client) { return client.fd < 0; });
    }
  }

  const std::map<std::string, Answer> answers_;
  const std::chrono::milliseconds interval_;
  int listener_ = -1;
  int port_ = 0;
  std::vector<Client> clients_;  // the serving thread's, until stop() joined it
  mutable std::mutex mutex_;
  std::map<std::string, int> received_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// Runs `call` on a thread and returns how long it took. If it is not done within a generous guard
// (it hangs on `server`: the bug the deadline tests are for), the test fails and `server` is
// stopped, which closes the connection the call waits on and so ends it.
template <class Call>
std::chrono::milliseconds duration_of(DripServer& server, Call call) {
  auto done = std::async(std::launch::async, [&] {
    const auto start = std::chrono::steady_clock::now();
    call();
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
  });
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "the call still ran after 20 s: it hangs on the dripping server";
    server.stop();
  }
  return done.get();
}

}  // namespace cubby::testing
