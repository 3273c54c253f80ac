#include "net/resolver.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

namespace cubby {
namespace {

Result<std::vector<SocketAddress>> system_resolve(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int status = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (status != 0) {
    return fail(Errc::io, "cannot resolve ", host, ": ", ::gai_strerror(status));
  }
  std::vector<SocketAddress> out;
  for (const addrinfo* at = found; at != nullptr; at = at->ai_next) {
    SocketAddress address;
    std::memcpy(&address.storage, at->ai_addr, at->ai_addrlen);
    address.length = at->ai_addrlen;
    out.push_back(address);
  }
  ::freeaddrinfo(found);
  return out;
}

}  // namespace

std::optional<SocketAddress> numeric_address(const std::string& host, int port) {
  SocketAddress address;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(port));
    address.length = sizeof *v4;
    return address;
  }
  if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(port));
    address.length = sizeof *v6;
    return address;
  }
  return std::nullopt;
}

Result<std::vector<SocketAddress>> resolve_bounded(const std::string& host, int port,
                                                   std::chrono::steady_clock::time_point deadline,
                                                   const Resolver& resolver, bool& timed_out) {
  timed_out = false;
  if (auto numeric = numeric_address(host, port)) return std::vector<SocketAddress>{*numeric};
  // The resolver runs on a detached thread that owns its state: this call stops waiting at the
  // deadline, the thread ends whenever the resolver returns (never joined, so never waited for).
  struct State {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    Result<std::vector<SocketAddress>> result = std::vector<SocketAddress>{};
  };
  auto state = std::make_shared<State>();
  Resolver resolve = resolver ? resolver : Resolver(system_resolve);
  try {
    std::thread([state, resolve = std::move(resolve), host, port] {
      auto result = resolve(host, port);
      std::lock_guard lock(state->mutex);
      state->result = std::move(result);
      state->done = true;
      state->done_cv.notify_all();
    }).detach();
  } catch (const std::system_error&) {
    return fail(Errc::io, "cannot resolve ", host, ": no thread to resolve it on");
  }
  std::unique_lock lock(state->mutex);
  if (!state->done_cv.wait_until(lock, deadline, [&] { return state->done; })) {
    timed_out = true;
    return fail(Errc::io, "resolving ", host, " timed out");
  }
  if (state->result && state->result->empty()) {
    return fail(Errc::io, "cannot resolve ", host, ": no address");
  }
  return std::move(state->result);
}

}  // namespace cubby
