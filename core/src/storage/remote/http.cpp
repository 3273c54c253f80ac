#include "storage/remote/http.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <system_error>
#include <utility>

#include "storage/remote/deadline.hpp"
#include "storage/remote/http_answer.hpp"

namespace cubby {
namespace {

using Clock = std::chrono::steady_clock;

// `text` with its %XX escapes decoded; nullopt when a '%' is not followed by two hex digits.
std::optional<std::string> percent_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    std::uint8_t byte = 0;
    if (text.size() - i < 3 ||
        std::from_chars(text.data() + i + 1, text.data() + i + 3, byte, 16).ptr !=
            text.data() + i + 3) {
      return std::nullopt;
    }
    out += static_cast<char>(byte);
    i += 2;
  }
  return out;
}

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(bytes.data()),
                                      static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(std::max(written, 0)));
  return out;
}

}  // namespace

Result<HttpUrl> parse_http_url(std::string_view text) {
  const auto bad = [](const std::string& why) {
    return fail(Errc::invalid_argument, why,
                "; expected http[s]://[user:password@]host[:port][/prefix]");
  };
  const std::string_view scheme = text.starts_with("http://")    ? "http://"
                                  : text.starts_with("https://") ? "https://"
                                                                 : "";
  if (scheme.empty()) return bad("not an http:// or https:// URL");
  const std::string_view rest = text.substr(scheme.size());
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return bad("the URL has a query or a fragment");
  }
  const auto printable = [](std::string_view part) {
    return std::all_of(part.begin(), part.end(), [](char c) {
      const auto byte = static_cast<unsigned char>(c);
      return byte > 0x20 && byte < 0x7f && c != '\\' && c != '"' && c != '<' && c != '>';
    });
  };
  if (!printable(rest)) return bad("the URL holds a space, a control character or one of \\\"<>");
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  const std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  HttpUrl parsed;
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    const std::size_t colon = userinfo.find(':');
    auto user = percent_decoded(userinfo.substr(0, colon));
    auto password =
        percent_decoded(colon == std::string_view::npos ? "" : userinfo.substr(colon + 1));
    if (!user || !password) return bad("the URL's user or password has a bad %-escape");
    parsed.user = std::move(*user);
    parsed.password = std::move(*password);
    authority = authority.substr(at + 1);
  }
  // host, [IPv6 address] or name, then :port (digits; empty is the scheme's own).
  std::size_t host_end = authority.size();
  if (authority.starts_with('[')) {
    host_end = authority.find(']');
    if (host_end == std::string_view::npos) return bad("the URL's IPv6 address lacks its ']'");
    ++host_end;
  } else {
    host_end = std::min(authority.rfind(':'), authority.size());
  }
  const std::string_view host = authority.substr(0, host_end);
  const std::string_view name = host.starts_with('[') ? host.substr(1, host.size() - 2) : host;
  if (name.empty()) return bad("the URL names no host");
  if (name.find_first_of("[]@") != std::string_view::npos)
    return bad("the URL's host does not parse");
  std::string_view port = authority.substr(host_end);
  if (!port.empty()) {
    if (port.front() != ':') return bad("the URL's host is followed by neither ':' nor '/'");
    port.remove_prefix(1);
    const bool digits = port.size() <= 5 && std::all_of(port.begin(), port.end(), [](char c) {
                          return c >= '0' && c <= '9';
                        });
    const unsigned long number = digits && !port.empty() ? std::stoul(std::string(port)) : 1;
    if (!digits || number == 0 || number > 65535) {
      return bad("the URL's port is not a number from 1 to 65535");
    }
  }
  parsed.tls = scheme == "https://";
  parsed.endpoint.host = std::string(name);
  parsed.endpoint.port = port.empty() ? (parsed.tls ? 443 : 80) : std::stoi(std::string(port));
  parsed.authority = std::string(host);
  if (!port.empty()) parsed.authority.append(":").append(port);
  parsed.prefix = std::string(path);
  while (parsed.prefix.ends_with('/')) parsed.prefix.pop_back();
  parsed.base = std::string(scheme).append(parsed.authority).append(parsed.prefix);
  return parsed;
}

Result<HttpLayout> parse_http_layout(std::string_view name) {
  if (name == "flat") return HttpLayout::flat;
  if (name == "bazel") return HttpLayout::bazel;
  return fail(Errc::invalid_argument, "layout=", std::string(name),
              " is not a layout; use layout=flat (<prefix>/<key>, the default) or layout=bazel "
              "(<prefix>/ac/<64 hex digits>, for bazel-remote)");
}

std::string HttpBackend::key_path(const Key& key, HttpLayout layout) {
  std::string hex = key.hex();
  switch (layout) {
    case HttpLayout::bazel: {
      // bazel-remote's action cache takes 64 hex digits: extended by the key's leading digits.
      std::string digits = hex;
      while (digits.size() < 64) digits += hex.substr(0, 64 - digits.size());
      return "ac/" + digits;
    }
    case HttpLayout::flat:
      break;
  }
  return hex;
}

void HttpBackend::warn_once(std::atomic<bool>& flag, const std::string& message) {
  if (!flag.exchange(true)) std::fprintf(stderr, "cubby: %s\n", message.c_str());
}

std::string HttpBackend::timed_out() const {
  return "timed out after " + std::to_string(timeout_.count()) +
         " ms (CUBBY_REMOTE_TIMEOUT_MS, the bound of each whole call: connect and answer "
         "included)";
}

HttpBackend::HttpBackend(const HttpOptions& options, std::uint64_t max_value, AtomicStats& counted,
                         std::shared_ptr<const TlsContext> tls)
    : url_(options.url),
      location_(options.location),
      layout_(options.layout),
      tls_(std::move(tls)),
      resolver_(options.resolver),
      read_only_(options.read_only),
      timeout_(options.timeout),
      max_value_(max_value),
      counted_(counted) {
  if (!url_.user.empty()) {
    authorization_ = "Authorization: Basic " + base64(url_.user + ":" + url_.password) + "\r\n";
  } else if (!options.bearer_token.empty()) {
    authorization_ = "Authorization: Bearer " + options.bearer_token + "\r\n";
  }
}

HttpBackend::~HttpBackend() {
  if (connector_.joinable()) connector_.join();
}

Result<HttpBackend::ConnectionPtr> HttpBackend::connect(Clock::time_point deadline) {
  if (passed(deadline)) {
    counted_.add(Stat::remote_timeouts);
    return fail(Errc::io, location_, ": cannot connect: ", timed_out());
  }
  bool timeout = false;
  auto opened = RedisConnection::open(url_.endpoint, tls_.get(), deadline, resolver_, timeout);
  if (!opened) {
    timeout = timeout || passed(deadline);
    counted_.add(timeout ? Stat::remote_timeouts : Stat::remote_errors);
    return fail(Errc::io, location_, ": ", timeout ? timed_out() : opened.error().message);
  }
  return std::move(opened).value();
}

std::string HttpBackend::request_bytes(std::string_view method, const std::string& path,
                                       std::string_view body) const {
  std::string bytes;
  bytes.reserve(256 + body.size());
  bytes.append(method).append(" ").append(url_.prefix).append("/").append(path);
  bytes.append(" HTTP/1.1\r\nHost: ").append(url_.authority).append("\r\nUser-Agent: cubby\r\n");
  bytes.append(authorization_);
  if (method == "PUT") {
    bytes.append("Content-Type: application/octet-stream\r\nContent-Length: ")
        .append(std::to_string(body.size()))
        .append("\r\n");
  }
  return bytes.append("\r\n").append(body);
}

Result<HttpBackend::Answer> HttpBackend::exchange(ConnectionPtr& connection,
                                                  std::string_view method, const std::string& path,
                                                  std::string_view body, std::uint64_t limit,
                                                  Clock::time_point deadline) {
  const std::string request = request_bytes(method, path, body);
  const std::string doing = std::string(method) + " " + url_.prefix + "/" + path;
  for (bool kept = connection != nullptr;; kept = false) {
    if (!kept) {
      auto opened = connect(deadline);
      if (!opened) return std::move(opened).error();
      connection = std::move(opened).value();
    }
    HttpAnswerReader reader(*connection, deadline);
    const bool sent = connection->send(request, deadline);
    if (sent && reader.read(method, limit)) {
      if (!reader.reusable()) connection.reset();
      return Answer{reader.status(), std::move(reader.body())};
    }
    const bool timeout = connection->timed_out() || passed(deadline);
    const std::string error = connection->error();
    connection.reset();
    // A kept connection that the server closed meanwhile (its keep-alive timeout or request
    // limit): nothing came back; the request again on a new connection.
    if (kept && !timeout && !reader.received() &&
        reader.ended() != HttpAnswerReader::Ended::not_http) {
      continue;
    }
    if (reader.ended() == HttpAnswerReader::Ended::too_big) {
      counted_.add(Stat::remote_rejected);
      return fail(Errc::corrupt, location_, ": the answer to ", doing,
                  " is over CUBBY_REMOTE_MAX_ENTRY; not read");
    }
    if (reader.ended() == HttpAnswerReader::Ended::not_http) {
      counted_.add(Stat::remote_errors);
      return fail(Errc::io, location_, ": ", doing, ": ", reader.what(),
                  " (is it an HTTP server?)");
    }
    counted_.add(timeout ? Stat::remote_timeouts : Stat::remote_errors);
    return fail(Errc::io, location_, ": ", doing, " ", timeout ? timed_out() : "failed: " + error);
  }
}

Result<HttpBackend::Answer> HttpBackend::call(std::string_view method, const std::string& path,
                                              std::string_view body, std::uint64_t limit) {
  const Clock::time_point deadline = remote_deadline(timeout_);
  std::optional<ConnectionPtr> idle;
  switch (pool_.take(deadline, idle)) {
    case Pool<ConnectionPtr>::Taken::timed_out:
      counted_.add(Stat::remote_timeouts);
      return fail(Errc::io, location_, ": ", timed_out());
    case Pool<ConnectionPtr>::Taken::ahead_failed:  // skipped, as the breaker it tripped would
      counted_.add(Stat::remote_skipped);
      return fail(Errc::io, location_, " failed to connect just now; skipped");
    case Pool<ConnectionPtr>::Taken::idle:
    case Pool<ConnectionPtr>::Taken::none:
      break;
  }
  ConnectionPtr connection = idle ? std::move(*idle) : nullptr;
  auto answer = exchange(connection, method, path, body, limit, deadline);
  if (connection) pool_.put(std::move(connection));
  return answer;
}

Failure HttpBackend::unexpected(std::string_view method, long status) {
  const std::string answered =
      location_ + " answered " + std::string(method) + " with HTTP " + std::to_string(status);
  if (status == 429 || status >= 500 || ((status == 401 || status == 403) && method != "PUT")) {
    counted_.add(Stat::remote_errors);
    const char* why = status == 401 || status == 403
                          ? " (check the URL's user:password, CUBBY_REMOTE_TOKEN or "
                            "CUBBY_REMOTE_TOKEN_FILE)"
                          : "";
    return fail(Errc::io, answered, why);  // the server fails or refuses: back off
  }
  if (status >= 300 && status < 400) {
    counted_.add(Stat::remote_errors);
    warn_once(warned_status_, answered +
                                  ": a redirect, which cubby does not follow; set CUBBY_REMOTE to "
                                  "the URL it points to");
    return fail(Errc::corrupt, answered, " (a redirect: not followed)");
  }
  counted_.add(Stat::remote_errors);
  warn_once(warned_status_, answered +
                                ", which cubby does not expect; the remote is used as a "
                                "miss (shown once; `cubby stats` counts remote errors)");
  return fail(Errc::corrupt, answered);
}

Result<std::optional<std::string>> HttpBackend::get(const Key& key) {
  auto answer = call("GET", key_path(key, layout_), {}, max_value_);
  if (!answer) return std::move(answer).error();
  if (answer->status == 404 || answer->status == 410) return std::optional<std::string>();
  if (answer->status != 200) return unexpected("GET", answer->status);
  counted_.add(Stat::remote_bytes_read, answer->body.size());
  return std::optional<std::string>(std::move(answer->body));
}

Result<void> HttpBackend::put(const Key& key, std::string_view bytes) {
  if (!writable()) {
    return fail(Errc::invalid_argument, location_,
                " is read-only for this process (read-only layer, CUBBY_REMOTE_MODE=read or "
                "refused writes)");
  }
  auto answer = call("PUT", key_path(key, layout_), bytes, UINT64_MAX);
  if (!answer) {
    counted_.add(Stat::remote_writes_dropped);
    return std::move(answer).error();
  }
  const long status = answer->status;
  if (http_success(status)) {
    counted_.add(Stat::remote_writes);
    counted_.add(Stat::remote_bytes_written, bytes.size());
    return {};
  }
  counted_.add(Stat::remote_writes_dropped);
  const std::string answered = location_ + " answered PUT with HTTP " + std::to_string(status);
  if (status == 401 || status == 403 || status == 405) {
    writes_refused_ = true;
    warn_once(warned_refused_, answered +
                                   ": it refuses writes; this process only reads it from now on "
                                   "(check the credentials, the server's PUT permission, or mark "
                                   "the layer |read-only)");
    return fail(Errc::corrupt, answered);
  }
  if (status == 507 || status == 413) {
    warn_once(warned_full_, answered +
                                ": the server is out of space (or the entry is over its size "
                                "limit); writes are dropped, reads go on (shown once; `cubby "
                                "stats` counts remote writes lost)");
    return fail(Errc::corrupt, answered);
  }
  return unexpected("PUT", status);
}

Result<void> HttpBackend::remove(const Key& key) {
  if (read_only_) return fail(Errc::invalid_argument, location_, " is read-only");
  auto answer = call("DELETE", key_path(key, layout_), {}, UINT64_MAX);
  if (!answer) return std::move(answer).error();
  if (http_success(answer->status) || answer->status == 404) return {};
  return unexpected("DELETE", answer->status);
}
void HttpBackend::connect_ahead(std::function<void(const Failure&)> failed) {
  if (!pool_.begin_ahead()) return;
  auto run = [this, failed = std::move(failed)] {
    // Any HTTP answer means connected; the connection is pooled, open.
    ConnectionPtr connection;
    auto answer = exchange(connection, "HEAD", "", {}, 0, remote_deadline(timeout_));
    if (!answer) failed(answer.error());
    pool_.end_ahead(answer && connection ? std::optional<ConnectionPtr>(std::move(connection))
                                         : std::nullopt);
  };
  try {
    connector_ = std::thread(std::move(run));
  } catch (const std::system_error&) {  // no thread: the first lookup connects, as without this
    pool_.cancel_ahead();
  }
}

std::unique_ptr<RemoteTier> open_http_remote(const HttpOptions& options) {
  auto tls = remote_tls_context(options.url.tls, options.tls, options.location);
  if (!tls) return nullptr;
  auto counted = std::make_shared<AtomicStats>();
  auto backend = std::make_unique<HttpBackend>(options, Envelope::max_value(options.max_entry),
                                               *counted, std::move(*tls));
  return std::make_unique<RemoteTier>(std::move(backend), options, std::move(counted));
}

}  // namespace cubby
