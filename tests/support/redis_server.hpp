// A real redis-server for the remote-tier tests: started by the test itself on 127.0.0.1 on a free
// port (no persistence, its own temp folder), or the shared server CI started
// (CUBBY_TEST_REDIS_URL, for tests that neither stop nor pause it). Also a minimal RESP client, so
// tests can inspect and tamper with the server independently of the code under test.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "loopback.hpp"
#include "server_process.hpp"
#include "test_support.hpp"

namespace cubby::testing {

// The redis-server executable: CUBBY_TEST_REDIS_SERVER, else redis-server on PATH or /usr/bin,
// /usr/sbin, /usr/local/bin; empty if none.
inline std::string find_redis_server() {
  if (const char* path = std::getenv("CUBBY_TEST_REDIS_SERVER"); path && *path) return path;
  std::vector<std::string> folders;
  if (const char* path = std::getenv("PATH")) {
    std::string all = path;
    for (std::size_t start = 0; start <= all.size();) {
      const auto end = std::min(all.find(':', start), all.size());
      folders.push_back(all.substr(start, end - start));
      start = end + 1;
    }
  }
  for (const char* folder : {"/usr/bin", "/usr/sbin", "/usr/local/bin"})
    folders.emplace_back(folder);
  for (const auto& folder : folders) {
    std::string candidate = folder + "/redis-server";
    if (!folder.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// One reply of a RESP server, flattened: simple strings, errors ("-ERR ..."), integers as
// decimal text, bulk strings as their bytes; nullopt for a nil reply.
struct RespReply {
  char type = 0;  // '+', '-', ':', '$', '*'
  std::optional<std::string> value;
};

// Sends one command to 127.0.0.1:`port` on a fresh connection and reads one reply (arrays are
// returned with type '*' and their element count). nullopt if the server cannot be reached.
inline std::optional<RespReply> resp_command(int port, const std::vector<std::string>& args,
                                             int timeout_ms = 2000) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  std::string request = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& arg : args) request += "$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      ::close(fd);
      return std::nullopt;
    }
    sent += static_cast<std::size_t>(n);
  }
  std::string in;
  auto fill = [&](std::size_t want) {
    char buffer[65536];
    while (in.size() < want) {
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) return false;
      in.append(buffer, static_cast<std::size_t>(n));
    }
    return true;
  };
  std::optional<RespReply> out;
  std::size_t line_end = std::string::npos;
  while ((line_end = in.find("\r\n")) == std::string::npos) {
    if (!fill(in.size() + 1)) break;
  }
  if (line_end != std::string::npos) {
    RespReply reply;
    reply.type = in[0];
    const std::string line = in.substr(1, line_end - 1);
    if (reply.type == '$') {
      const long long length = std::stoll(line);
      if (length >= 0) {
        const auto need = line_end + 2 + static_cast<std::size_t>(length) + 2;
        if (fill(need)) reply.value = in.substr(line_end + 2, static_cast<std::size_t>(length));
      }
    } else {
      reply.value = line;
    }
    out = reply;
  }
  ::close(fd);
  return out;
}

class RedisServer {
 public:
  // Starts a private redis-server; nullptr (and `why`) when none is installed or it cannot start.
  // `extra`: more arguments, "{dir}" in them replaced by the server's own folder (a unix socket,
  // a cluster's node file, TLS ports and files).
  static std::unique_ptr<RedisServer> start(std::string* why,
                                            const std::vector<std::string>& extra = {}) {
    const std::string exe = find_redis_server();
    if (exe.empty()) {
      *why =
          "redis-server is not installed (Debian: apt-get install redis-server; or set "
          "CUBBY_TEST_REDIS_SERVER)";
      return nullptr;
    }
    for (int attempt = 0; attempt < 5; ++attempt) {
      auto server = std::unique_ptr<RedisServer>(new RedisServer());
      if (server->launch(exe, extra, free_port())) return server;
    }
    *why = "redis-server (" + exe + ") did not start on a free port of 127.0.0.1";
    return nullptr;
  }

  ~RedisServer() { stop(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  // The server's own folder (removed with it).
  std::filesystem::path dir() const { return dir_.path(); }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

  // Kills the server (SIGKILL) and reaps it.
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  // Kills the server and starts it again on the same ports with the same arguments (what it held
  // is gone): clients see their connections closed, then the same address serving again. False
  // when it does not start.
  bool restart() {
    stop();
    return launch(exe_, extra_, port_);
  }
  // Connections the server has accepted so far (INFO stats: total_connections_received),
  // including the one this question itself opens; 0 when it cannot be asked.
  std::uint64_t connections_received() const {
    auto reply = command({"INFO", "stats"});
    if (!reply || !reply->value) return 0;
    const std::string field = "total_connections_received:";
    const auto at = reply->value->find(field);
    if (at == std::string::npos) return 0;
    return std::stoull(reply->value->substr(at + field.size()));
  }
  // Connections accepted since `before` (a connections_received() value) other than the
  // questions themselves, once there is at least one (waits up to 5 s; 0 if none came).
  std::uint64_t await_connections_since(std::uint64_t before) const {
    std::uint64_t opened = 0;
    for (std::uint64_t asked = 1; asked <= 500 && opened == 0; ++asked) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      opened = connections_received() - before - asked;
    }
    return opened;
  }
  // Freezes / thaws the server: connections are accepted by the kernel, never answered.
  // (Nothing once stop() ended it.)
  void pause() {
    if (pid_ > 0) ::kill(pid_, SIGSTOP);
  }
  void resume() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
  }
  // False once stop() ended it.
  bool running() const { return pid_ > 0; }

  std::optional<RespReply> command(const std::vector<std::string>& args) const {
    return resp_command(port_, args);
  }

  // A TCP port of 127.0.0.1 that nothing listens on now; 0 if none was found.
  static int free_port() { return free_loopback_port(); }

 private:
  RedisServer() : dir_("redis") {}

  bool launch(const std::string& exe, const std::vector<std::string>& extra, int on_port) {
    exe_ = exe;
    extra_ = extra;
    port_ = on_port;
    if (port_ == 0) return false;
    const std::string port = std::to_string(port_);
    const std::string dir = dir_.path().string();
    std::vector<std::string> args{
        exe,  "--port",           port, "--bind",     "127.0.0.1", "--save",
        "",   "--appendonly",     "no", "--dir",      dir,         "--daemonize",
        "no", "--protected-mode", "no", "--loglevel", "warning"};
    for (std::string arg : extra) {
      if (const auto at = arg.find("{dir}"); at != std::string::npos) arg.replace(at, 5, dir);
      args.push_back(std::move(arg));
    }
    pid_ = start_server(args, [&] {
      auto pong = resp_command(port_, {"PING"}, 200);
      return pong && pong->value == "PONG";
    });
    return pid_ > 0;
  }

  TempDir dir_;
  std::string exe_;
  std::vector<std::string> extra_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// The redis-server of this test process, shared by the tests that ask for it: a suite registered
// PER_SUITE (tests/CMakeLists.txt) runs in one process, so its tests start one server instead of
// one each. Every call hands it over as a fresh server would be: resumed (a test paused it),
// emptied (FLUSHALL), its statistics reset (CONFIG RESETSTAT, so connections_received() counts
// from here); and started again when a test stopped it, left a password on it (requirepass) or
// added ACL users. Keep using keys unique to the test where a test's keys could outlive it in a
// process it shares (a background write still landing). nullptr (and `why`) when none starts.
inline RedisServer* shared_redis(std::string* why) {
  static std::unique_ptr<RedisServer> server;
  if (server && !server->running()) server.reset();
  if (server) {
    server->resume();
    const auto users = server->command({"ACL", "USERS"});
    const bool clean = users && users->type == '*' && users->value == "1" &&
                       server->command({"FLUSHALL"}) &&
                       server->command({"CONFIG", "RESETSTAT"}).value_or(RespReply{}).value == "OK";
    if (!clean) server.reset();  // stopped, password set, users added: a new one
  }
  if (!server) server = RedisServer::start(why);
  return server.get();
}

// The port of a redis://127.0.0.1:PORT URL (CUBBY_TEST_REDIS_URL), or 0.
inline int port_of_local_url(const std::string& url) {
  const std::string prefix = "redis://127.0.0.1:";
  if (!url.starts_with(prefix)) return 0;
  try {
    return std::stoi(url.substr(prefix.size()));
  } catch (...) {
    return 0;
  }
}

}  // namespace cubby::testing
