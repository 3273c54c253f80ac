#include "redis_url.hpp"

#include <charconv>

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

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_digit(text[i + 1]) >= 0 &&
        hex_digit(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(text[i + 1]) * 16 + hex_digit(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

constexpr std::string_view kScheme = "redis://";

}  // namespace

Result<RedisUrl> parse_redis_url(std::string_view url) {
  if (!url.starts_with(kScheme)) {
    return fail(Errc::invalid_argument,
                "CUBBY_REMOTE must start with redis:// (redis://[user:password@]host:port[/db]); "
                "TLS (rediss://) is not supported");
  }
  std::string_view rest = url.substr(kScheme.size());
  RedisUrl out;
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view credentials = rest.substr(0, at);
    rest = rest.substr(at + 1);
    if (const auto colon = credentials.find(':'); colon != std::string_view::npos) {
      out.user = percent_decode(credentials.substr(0, colon));
      out.password = percent_decode(credentials.substr(colon + 1));
    } else {
      out.password = percent_decode(credentials);  // redis://password@host, as redis-cli -u
    }
  }
  std::string_view authority = rest;
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    authority = rest.substr(0, slash);
    std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) {
      auto parsed = parse_int(db, 0, 1 << 20, "the database (after the last /)");
      if (!parsed) return std::move(parsed).error();
      out.db = *parsed;
    }
  }
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
                "CUBBY_REMOTE names no host (redis://[user:password@]host:port[/db])");
  }
  if (!port.empty()) {
    auto parsed = parse_int(port, 1, 65535, "the port");
    if (!parsed) return std::move(parsed).error();
    out.port = *parsed;
  }
  return out;
}

std::string redact_redis_url(std::string_view url) {
  if (!url.starts_with(kScheme)) return "(a CUBBY_REMOTE URL that is not redis://)";
  std::string_view rest = url.substr(kScheme.size());
  const auto at = rest.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  return std::string(kScheme) + "***@" + std::string(rest.substr(at + 1));
}

}  // namespace cubby
