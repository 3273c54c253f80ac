#include "storage/remote/redis_url.hpp"

#include <charconv>

#include "util/bytes.hpp"

namespace cubby {
namespace {

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

std::string percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    std::uint8_t byte = 0;
    if (text[i] == '%' && i + 2 < text.size() &&
        from_hex(text.substr(i + 1, 2), &byte) == std::string_view::npos) {
      out += static_cast<char>(byte);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// The scheme `url` starts with (one of kRedisSchemes), or empty.
std::string_view scheme_of(std::string_view url) {
  for (std::string_view scheme : kRedisSchemes) {
    if (url.starts_with(scheme)) return scheme;
  }
  return {};
}

bool is_unix(std::string_view scheme) { return scheme == "unix://" || scheme == "redis+unix://"; }

// Splits "credentials@" off the front of `rest` into `out`'s user and password.
void take_credentials(std::string_view& rest, std::string_view::size_type at, RedisUrl& out) {
  const std::string_view credentials = rest.substr(0, at);
  rest = rest.substr(at + 1);
  if (const auto colon = credentials.find(':'); colon != std::string_view::npos) {
    out.user = percent_decode(credentials.substr(0, colon));
    out.password = percent_decode(credentials.substr(colon + 1));
  } else {
    out.password = percent_decode(credentials);  // redis://password@host, as redis-cli -u
  }
}

// Where the credentials of a unix:// URL's rest end ('@' before the socket's path), or npos.
std::string_view::size_type unix_credentials_end(std::string_view rest) {
  if (rest.starts_with('/')) return std::string_view::npos;
  return rest.find("@/");
}

constexpr std::string_view kPathChars =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_/+";

Result<RedisUrl> parse_unix_url(std::string_view rest) {
  RedisUrl out;
  if (const auto at = unix_credentials_end(rest); at != std::string_view::npos) {
    take_credentials(rest, at, out);
  }
  if (const auto query = rest.find('?'); query != std::string_view::npos) {
    const std::string_view parameter = rest.substr(query + 1);
    if (!parameter.starts_with("db=")) {
      return fail(Errc::invalid_argument,
                  "CUBBY_REMOTE: a unix socket URL takes only ?db=N after its path; give the "
                  "password before it: unix://[user]:password@/path/to/socket");
    }
    auto parsed = parse_int(parameter.substr(3), 0, 1 << 20, "the database (?db=N)");
    if (!parsed) return std::move(parsed).error();
    out.db = *parsed;
    rest = rest.substr(0, query);
  }
  if (!rest.starts_with('/') || rest.size() < 2 || rest.find('#') != std::string_view::npos) {
    return fail(Errc::invalid_argument,
                "CUBBY_REMOTE names no socket path (unix:///path/to/redis.sock)");
  }
  out.unix_path = std::string(rest);
  return out;
}

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

// One node of a URL's authority: host[:port] ([v6]:port).
Result<RedisHost> parse_host(std::string_view authority) {
  RedisHost out;
  std::string_view port;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) {
      return fail(Errc::invalid_argument, "CUBBY_REMOTE has an unclosed [ in its host");
    }
    out.host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return fail(Errc::invalid_argument, "CUBBY_REMOTE: junk after ]");
      port = after.substr(1);
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    out.host = std::string(authority.substr(0, colon));
    port = authority.substr(colon + 1);
  } else {
    out.host = std::string(authority);
  }
  if (out.host.empty()) {
    return fail(Errc::invalid_argument,
                "CUBBY_REMOTE names no host (redis://[user:password@]host:port[/db], or "
                "host:port,host:port... for the nodes of a cluster)");
  }
  if (!port.empty()) {
    auto parsed = parse_int(port, 1, 65535, "the port");
    if (!parsed) return std::move(parsed).error();
    out.port = *parsed;
  }
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
  std::string_view rest = url.substr(scheme.size());
  if (is_unix(scheme)) return parse_unix_url(rest);
  RedisUrl out;
  out.tls = scheme == "rediss://";
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    take_credentials(rest, at, out);
  }
  const Tail tail = split_tail(rest);
  if (!tail.query.empty() || !tail.fragment.empty()) {
    return fail(Errc::invalid_argument,
                "CUBBY_REMOTE has a query or fragment (?... or #...), which cubby does not read; "
                "give the password in the URL itself: redis://[user]:password@host:port/db "
                "(percent-encode @ : / ? # in it)");
  }
  if (!tail.path.empty()) {
    const std::string_view db = tail.path.substr(1);
    if (!db.empty()) {
      auto parsed = parse_int(db, 0, 1 << 20, "the database (after the last /)");
      if (!parsed) return std::move(parsed).error();
      out.db = *parsed;
    }
  }
  for (std::string_view nodes = tail.authority;;) {  // host[:port], then ,host[:port]...
    const auto comma = nodes.find(',');
    auto node = parse_host(nodes.substr(0, comma));
    if (!node) return std::move(node).error();
    if (out.host.empty()) {
      out.host = std::move(node->host);
      out.port = node->port;
    } else {
      out.more_seeds.push_back(std::move(node).value());
    }
    if (comma == std::string_view::npos) break;
    nodes = nodes.substr(comma + 1);
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
