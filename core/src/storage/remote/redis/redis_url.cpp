#include "storage/remote/redis/redis_url.hpp"

#include <charconv>

#include "net/url.hpp"

namespace cubby {
namespace {

constexpr int kDefaultPort = 6379;

Result<int> parse_int(std::string_view text, int low, int high, const char* what) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < low ||
      value > high) {
    return fail(Errc::invalid_argument, what, " must be a number from ", std::to_string(low),
                " to ", std::to_string(high));
  }
  return value;
}

// The scheme `url` starts with (one of kRedisSchemes), or empty.
std::string_view scheme_of(std::string_view url) {
  for (std::string_view scheme : kRedisSchemes) {
    if (url.starts_with(scheme)) return scheme;
  }
  return {};
}

bool is_unix(std::string_view scheme) { return scheme == "unix://" || scheme == "redis+unix://"; }

// Where the credentials of a unix:// URL's rest end ('@' before the socket's path), or npos.
std::string_view::size_type unix_credentials_end(std::string_view rest) {
  if (rest.starts_with('/')) return std::string_view::npos;
  return rest.find("@/");
}

constexpr std::string_view kPathChars =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_/+";

// The parts of what follows "redis://[credentials@]": host[:port], then /db, ?query, #fragment.
struct Tail {
  std::string_view authority, path, query, fragment;  // path, query, fragment with their / ? #
};

Tail split_tail(std::string_view rest) {
  Tail out;
  const auto fragment = rest.find('#');
  if (fragment != std::string_view::npos) {
    out.fragment = rest.substr(fragment);
    rest = rest.substr(0, fragment);
  }
  const auto query = rest.find('?');
  if (query != std::string_view::npos) {
    out.query = rest.substr(query);
    rest = rest.substr(0, query);
  }
  const auto slash = rest.find('/');
  out.authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) out.path = rest.substr(slash);
  return out;
}

bool all_of(std::string_view text, std::string_view allowed) {
  return text.find_first_not_of(allowed) == std::string_view::npos;
}

constexpr std::string_view kDigits = "0123456789";
constexpr std::string_view kNameChars =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_";
constexpr std::string_view kAddressChars =  // of a bracketed IPv6 address, with a zone
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_:%";

// Whether `authority` is host[:port] made only of what a host name, an address and a port hold
// (so it can hold no secret).
bool plain_authority(std::string_view authority) {
  std::string_view host = authority;
  std::string_view port;
  std::string_view host_chars = kNameChars;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return false;
    host = authority.substr(1, close - 1);
    host_chars = kAddressChars;
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after[0] != ':') return false;
    port = after.substr(after.empty() ? 0 : 1);
  } else if (const auto colon = authority.find(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  return all_of(host, host_chars) && all_of(port, kDigits);
}

// plain_authority for each node of a comma-separated list (a cluster URL's nodes).
bool plain_authorities(std::string_view authorities) {
  for (;;) {
    const auto comma = authorities.find(',');
    if (!plain_authority(authorities.substr(0, comma))) return false;
    if (comma == std::string_view::npos) return true;
    authorities = authorities.substr(comma + 1);
  }
}

// A unix:// or redis+unix:// URL's socket path and ?db=N, into `out` (credentials already in).
Result<RedisUrl> unix_url(const Url& parts, RedisUrl out) {
  if (parts.query) {
    if (!parts.query->starts_with("db=")) {
      return fail(Errc::invalid_argument,
                  "CUBBY_REMOTE: a unix socket URL takes only ?db=N after its path; give the "
                  "password before it: unix://[user]:password@/path/to/socket");
    }
    auto db =
        parse_int(std::string_view(*parts.query).substr(3), 0, 1 << 20, "the database (?db=N)");
    if (!db) return std::move(db).error();
    out.db = *db;
  }
  if (!parts.hosts.empty() || parts.path.size() < 2 || parts.fragment) {
    return fail(Errc::invalid_argument,
                "CUBBY_REMOTE names no socket path (unix:///path/to/redis.sock)");
  }
  out.unix_path = parts.path;
  return out;
}

}  // namespace

Result<RedisUrl> parse_redis_url(std::string_view url) {
  const std::string_view scheme = scheme_of(url);
  if (scheme.empty()) {
    return fail(Errc::invalid_argument,
                "CUBBY_REMOTE must start with redis://, rediss:// (TLS) or unix:// "
                "(redis://[user:password@]host:port[/db], unix:///path/to/socket)");
  }
  auto parsed = parse_url(url);
  if (!parsed) {
    return fail(Errc::invalid_argument, "CUBBY_REMOTE: ", parsed.error().message,
                " (redis://[user:password@]host:port[/db], unix:///path/to/socket)");
  }
  Url& parts = *parsed;
  RedisUrl out;
  if (parts.has_password) {
    out.user = std::move(parts.user);
    out.password = std::move(parts.password);
  } else {  // redis://password@host, as redis-cli -u: user information without ':' is the password
    out.password = std::move(parts.user);
  }
  if (is_unix(scheme)) return unix_url(parts, std::move(out));
  out.tls = scheme == "rediss://";
  if (parts.query || parts.fragment) {
    return fail(Errc::invalid_argument,
                "CUBBY_REMOTE has a query or fragment (?... or #...), which cubby does not read; "
                "give the password in the URL itself: redis://[user]:password@host:port/db "
                "(percent-encode @ : / ? # in it)");
  }
  if (parts.hosts.empty()) {
    return fail(Errc::invalid_argument,
                "CUBBY_REMOTE names no host (redis://[user:password@]host:port[/db], or "
                "host:port,host:port... for the nodes of a cluster)");
  }
  if (parts.path.size() > 1) {
    auto db = parse_int(std::string_view(parts.path).substr(1), 0, 1 << 20,
                        "the database (after the last /)");
    if (!db) return std::move(db).error();
    out.db = *db;
  }
  for (UrlHost& node : parts.hosts) {
    const int port = node.port.value_or(kDefaultPort);
    if (out.host.empty()) {
      out.host = std::move(node.host);
      out.port = port;
    } else {
      out.more_seeds.push_back(RedisHost{std::move(node.host), port});
    }
  }
  if (!out.more_seeds.empty() && out.db != 0) {
    return fail(Errc::invalid_argument,
                "CUBBY_REMOTE names several nodes (a Redis Cluster), which have one database "
                "only: leave /db off");
  }
  return out;
}

std::string redact_redis_url(std::string_view url) {
  const std::string_view scheme = scheme_of(url);
  if (scheme.empty()) return "(a CUBBY_REMOTE URL that is not redis://, rediss:// or unix://)";
  std::string_view rest = url.substr(scheme.size());
  std::string out(scheme);
  if (is_unix(scheme)) {
    if (const auto at = unix_credentials_end(rest); at != std::string_view::npos) {
      out += "***@";
      rest = rest.substr(at + 1);
    }
    const auto query = rest.find_first_of("?#");
    const std::string_view path = rest.substr(0, query);
    out += all_of(path, kPathChars) ? path : "/***";
    if (query != std::string_view::npos) {
      const std::string_view tail = rest.substr(query);
      out += tail.starts_with("?db=") && all_of(tail.substr(4), kDigits) ? tail : "?***";
    }
    return out;
  }
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    out += "***@";
    rest = rest.substr(at + 1);
  }
  const Tail tail = split_tail(rest);
  // Only what cannot be a secret is shown as it is: a host name or address, a database number,
  // the names of query parameters.
  out += plain_authorities(tail.authority) ? tail.authority : "***";
  if (!tail.path.empty()) out += all_of(tail.path.substr(1), kDigits) ? tail.path : "/***";
  if (!tail.query.empty()) {
    std::string_view query = tail.query.substr(1);
    for (char separator = '?';; separator = '&') {
      const auto amp = query.find('&');
      const std::string_view parameter = query.substr(0, amp);
      out += separator;
      if (const auto equals = parameter.find('='); equals != std::string_view::npos) {
        const std::string_view name = parameter.substr(0, equals);
        out += all_of(name, kNameChars) ? name : "***";
        out += "=***";
      } else if (!parameter.empty()) {
        out += "***";  // a bare parameter may be a secret
      }
      if (amp == std::string_view::npos) break;
      query = query.substr(amp + 1);
    }
  }
  if (!tail.fragment.empty()) out += "#***";
  return out;
}

}  // namespace cubby
