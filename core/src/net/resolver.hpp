// Name resolution bounded by a deadline: a host's addresses looked up on a thread of their own,
// which the caller waits for until its deadline only (getaddrinfo itself takes no deadline).
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cubby/error.hpp"

namespace cubby {

// One resolved address of a host.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
};

// Resolves `host`:`port` to addresses (may block: it is called on a thread of its own). The
// default (nullptr) is getaddrinfo. Tests pass one that hangs.
using Resolver =
    std::function<Result<std::vector<SocketAddress>>(const std::string& host, int port)>;

// `host` as a numeric IPv4 or IPv6 address (no brackets) with `port`, or nullopt when it is a name.
std::optional<SocketAddress> numeric_address(const std::string& host, int port);

// The addresses of `host`:`port` by `deadline`. A numeric address is converted at once; a name is
// resolved by `resolver` on a detached thread that this call waits for until `deadline` only
// (the thread owns everything it touches, so one still blocked in the resolver after the call,
// or at exit, holds nothing up). Errc::io otherwise; `timed_out` says whether the deadline passed.
Result<std::vector<SocketAddress>> resolve_bounded(const std::string& host, int port,
                                                   std::chrono::steady_clock::time_point deadline,
                                                   const Resolver& resolver, bool& timed_out);

}  // namespace cubby
