#include "net/url.hpp"

#include <algorithm>

#include "util/bytes.hpp"

namespace cubby {
namespace {

// `text` with its %XX escapes decoded; nullopt when a '%' is not followed by two hex digits.
std::optional<std::string> percent_decoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    std::uint8_t byte = 0;
    if (text.size() - i < 3 || from_hex(text.substr(i + 1, 2), &byte) != std::string_view::npos) {
      return std::nullopt;
    }
    out += static_cast<char>(byte);
    i += 2;
  }
  return out;
}

bool is_scheme(std::string_view scheme) {
  const auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '-' || c == '.';
  };
  return !scheme.empty() && std::all_of(scheme.begin(), scheme.end(), allowed) &&
         !(scheme[0] >= '0' && scheme[0] <= '9');
}

// A port: 1 to 5 digits making a number from 1 to 65535.
std::optional<int> port_number(std::string_view digits) {
  if (digits.empty() || digits.size() > 5) return std::nullopt;
  int value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > 65535) return std::nullopt;
  return value;
}

// One host of the authority: host[:port] or [v6][:port].
Result<UrlHost> parse_host(std::string_view item) {
  UrlHost out;
  std::string_view port;
  std::string_view host_spelled = item;
  if (item.starts_with('[')) {
    const auto close = item.find(']');
    if (close == std::string_view::npos) {
      return fail(Errc::invalid_argument, "the URL's IPv6 address lacks its ']'");
    }
    out.host = std::string(item.substr(1, close - 1));
    host_spelled = item.substr(0, close + 1);
    const std::string_view after = item.substr(close + 1);
    if (!after.empty() && after[0] != ':') {
      return fail(Errc::invalid_argument,
                  "the URL's IPv6 address is followed by neither ':' nor '/'");
    }
    port = after.substr(after.empty() ? 0 : 1);
  } else {
    const auto colon = item.rfind(':');
    host_spelled = item.substr(0, colon);
    out.host = std::string(host_spelled);
    if (colon != std::string_view::npos) port = item.substr(colon + 1);
  }
  if (out.host.empty()) return fail(Errc::invalid_argument, "the URL names no host");
  if (out.host.find_first_of("[]") != std::string::npos) {
    return fail(Errc::invalid_argument,
                "the URL's host does not parse (a '[' or ']' out of place)");
  }
  out.spelled = std::string(host_spelled);
  if (!port.empty()) {
    out.port = port_number(port);
    if (!out.port) {
      return fail(Errc::invalid_argument, "the URL's port is not a number from 1 to 65535");
    }
    out.spelled.append(":").append(port);
  }
  return out;
}

}  // namespace

Result<Url> parse_url(std::string_view text) {
  const auto separator = text.find("://");
  if (separator == std::string_view::npos || !is_scheme(text.substr(0, separator))) {
    return fail(Errc::invalid_argument, "not a URL (scheme://...)");
  }
  if (std::any_of(text.begin(), text.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte <= 0x20 || byte == 0x7f;
      })) {
    return fail(Errc::invalid_argument, "the URL holds a space or a control character");
  }
  Url out;
  out.scheme = std::string(text.substr(0, separator));
  std::string_view rest = text.substr(separator + 3);
  if (const auto hash = rest.find('#'); hash != std::string_view::npos) {
    out.fragment = std::string(rest.substr(hash + 1));
    rest = rest.substr(0, hash);
  }
  if (const auto question = rest.find('?'); question != std::string_view::npos) {
    out.query = std::string(rest.substr(question + 1));
    rest = rest.substr(0, question);
  }
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) out.path = std::string(rest.substr(slash));
  // An '@' past the authority may end a password that holds a '/', '?' or '#' unencoded.
  const bool stray_at = out.path.find('@') != std::string::npos ||
                        out.query.value_or("").find('@') != std::string::npos ||
                        out.fragment.value_or("").find('@') != std::string::npos;
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view info = authority.substr(0, at);
    const auto colon = info.find(':');
    auto user = percent_decoded(info.substr(0, colon));
    auto password = percent_decoded(colon == std::string_view::npos ? "" : info.substr(colon + 1));
    if (!user || !password) {
      return fail(Errc::invalid_argument,
                  "the URL's user or password has a bad %-escape (a '%' not followed by two hex "
                  "digits; write a '%' itself as %25)");
    }
    out.has_user_info = true;
    out.has_password = colon != std::string_view::npos;
    out.user = std::move(*user);
    out.password = std::move(*password);
    authority = authority.substr(at + 1);
  }
  while (!authority.empty()) {
    const auto comma = authority.find(',');
    auto host = parse_host(authority.substr(0, comma));
    if (!host && stray_at) {
      return fail(Errc::invalid_argument, host.error().message,
                  "; a '/', '?' or '#' in the user or password is written %2F, %3F or %23");
    }
    if (!host) return std::move(host).error();
    out.hosts.push_back(std::move(host).value());
    if (comma == std::string_view::npos) break;
    authority = authority.substr(comma + 1);
    if (authority.empty()) return fail(Errc::invalid_argument, "the URL names no host after a ','");
  }
  return out;
}

}  // namespace cubby
