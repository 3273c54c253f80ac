// The one parser of the URLs that name a remote's server (CUBBY_REMOTE): the generic syntax of
// RFC 3986 with an authority of one or more hosts, which each scheme's backend then reads
// (storage/remote/redis/redis_url.hpp, storage/remote/http/http.hpp):
//   scheme://[user[:password]@][host[:port][,host[:port]]...][/path][?query][#fragment]
// The authority ends at the first '/', '?' or '#' after "scheme://"; its user information ends at
// its last '@' (an '@' may stand unencoded in a password; '/', '?' and '#' must be percent-encoded
// there: %2F, %3F, %23). A host is a name, an IPv4 address or an IPv6 address in brackets; a port
// is a number from 1 to 65535 (an empty one is none). User and password are percent-decoded: a
// '%' not followed by two hex digits is refused. Path, query and fragment are returned as written.
// No space or control character anywhere. Errors never quote the URL (it may hold a password).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/error.hpp"

namespace cubby {

// One host of a URL's authority.
struct UrlHost {
  std::string host;         // a name or an address (an IPv6 address without its brackets)
  std::optional<int> port;  // none given: the scheme's own
  std::string spelled;  // host[:port] as the URL writes it (brackets kept; an empty port left out)
};

struct Url {
  std::string scheme;          // before "://", as written ("redis", "redis+unix", "https")
  bool has_user_info = false;  // the authority has an '@'
  bool has_password = false;   // the user information has a ':'
  std::string user, password;  // percent-decoded: before and after the user information's first ':'
  std::vector<UrlHost> hosts;  // in the URL's order; empty when the authority names none
  std::string path;            // from its '/' on; empty when there is none
  std::optional<std::string> query;     // after '?'; nullopt when there is no '?'
  std::optional<std::string> fragment;  // after '#'; nullopt when there is no '#'
};

// `text` taken apart; invalid_argument saying what is wrong (never quoting the URL) when it is not
// scheme://..., holds a space or a control character, a bad %-escape in its user information, an
// empty host in a list, an unclosed '[', something after ']' other than ':port', a '[' or ']' in a
// host name, or a port that is not a number from 1 to 65535.
Result<Url> parse_url(std::string_view text);

}  // namespace cubby
