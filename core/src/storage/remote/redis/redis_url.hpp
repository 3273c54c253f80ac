// CUBBY_REMOTE URLs of Redis, read from net/url.hpp's parts. Pure.
//   redis://[[user]:password@]host[:port][/db]     TCP
//   redis://[[user]:password@]host[:port],host[:port]...  nodes of one Redis Cluster (its seeds:
//                                                  the slot map is read from the first that
//                                                  answers; no /db)
//   rediss://[[user]:password@]host[:port][/db]    TCP with TLS (net/tls_context.hpp)
//   unix://[[user]:password@]/path/to/socket[?db=N] and redis+unix://... : a unix socket
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cubby/error.hpp"

namespace cubby {

// One node a URL names.
struct RedisHost {
  std::string host;  // a name, an IPv4 address or an IPv6 address (brackets removed)
  int port = 6379;
};

struct RedisUrl {
  std::string user;      // empty: the default user (AUTH password) or no AUTH
  std::string password;  // empty: no AUTH
  std::string host;      // a name, an IPv4 address or a bracketed IPv6 address (brackets removed)
  int port = 6379;
  int db = 0;
  bool tls = false;       // rediss://
  std::string unix_path;  // unix:// and redis+unix://: the socket (host and port unused)
  std::vector<RedisHost> more_seeds;  // the further nodes of a cluster URL, in the URL's order
};

// The URL prefixes of Redis remotes.
inline constexpr std::string_view kRedisSchemes[] = {"redis://", "rediss://", "unix://",
                                                     "redis+unix://"};

// Parses `url`; invalid_argument (naming what is wrong, never the password) otherwise.
// User and password are percent-decoded (a '%' not followed by two hex digits is refused); user
// information without a ':' is the password (redis://password@host, as redis-cli -u). A query or
// fragment (`?password=...`) is refused with a message that says where the password goes (a unix
// socket's `?db=N` excepted).
Result<RedisUrl> parse_redis_url(std::string_view url);

// `url` with everything that may be a secret replaced by "***": safe for logs and stats, for any
// input. User and password, every query value (and bare parameter), any fragment, a path that is
// not a database number and a host part with characters no host name has are redacted; a URL of
// another scheme is reduced to a phrase.
std::string redact_redis_url(std::string_view url);

}  // namespace cubby
