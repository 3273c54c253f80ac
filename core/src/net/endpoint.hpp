// Endpoint: where a server listens, as the remote backends (storage/remote/redis, http) name it:
// a unix socket when `unix_path` is set, else host:port.
#pragma once

#include <string>

namespace cubby {

struct Endpoint {
  std::string host;  // a name or a numeric address (IPv6 without brackets)
  int port = 6379;
  std::string unix_path;

  bool operator==(const Endpoint&) const = default;
  // "host:port" ("[v6]:port") or the socket's path: for messages, and the key of what is kept per
  // server (pooled connections, TLS sessions, a cluster node's back-off).
  std::string name() const;
};

}  // namespace cubby
