// CUBBY_REMOTE URLs: redis://[[user]:password@]host[:port][/db]. Pure.
#pragma once

#include <string>
#include <string_view>

#include "cubby/error.hpp"

namespace cubby {

struct RedisUrl {
  std::string user;      // empty: the default user (AUTH password) or no AUTH
  std::string password;  // empty: no AUTH
  std::string host;      // a name, an IPv4 address or a bracketed IPv6 address (brackets removed)
  int port = 6379;
  int db = 0;
};

// Parses `url`; invalid_argument (naming what is wrong, never the password) otherwise.
// User and password may be percent-encoded.
Result<RedisUrl> parse_redis_url(std::string_view url);

// `url` with the password (and user) replaced by "***": safe for logs and stats. An unparseable
// URL is reduced to its scheme.
std::string redact_redis_url(std::string_view url);

}  // namespace cubby
