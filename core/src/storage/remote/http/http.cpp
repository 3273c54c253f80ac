#include "storage/remote/http/http.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <system_error>
#include <utility>

#include "net/deadline.hpp"
#include "net/url.hpp"
#include "storage/remote/http/http_answer.hpp"

namespace cubby {
namespace {

using Clock = std::chrono::steady_clock;

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
  // What goes into the request line and the Host header as written: printable ASCII, no quotes
  // or angle brackets (the user and password go base64-encoded).
  if (!std::all_of(text.begin(), text.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte > 0x20 && byte < 0x7f && c != '\\' && c != '"' && c != '<' && c != '>';
      })) {
    return bad("the URL holds a space, a control character or one of \\\"<>");
  }
  auto parsed = parse_url(text);
  if (!parsed) return bad(parsed.error().message);
  Url& parts = *parsed;
  if (parts.query || parts.fragment) return bad("the URL has a query or a fragment");
  if (parts.hosts.empty()) return bad("the URL names no host");
  if (parts.hosts.size() > 1) return bad("the URL names several hosts; an HTTP remote has one");
  HttpUrl out;
  out.user = std::move(parts.user);
  out.password = std::move(parts.password);
  out.tls = scheme == "https://";
  UrlHost& host = parts.hosts.front();
  out.endpoint.host = std::move(host.host);
  out.endpoint.port = host.port.value_or(out.tls ? 443 : 80);
  out.authority = std::move(host.spelled);
  out.prefix = std::move(parts.path);
  while (out.prefix.ends_with('/')) out.prefix.pop_back();
  out.base = std::string(scheme).append(out.authority).append(out.prefix);
  return out;
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

HttpBackend::HttpBackend(const HttpOptions& options, std::uint64_t max_value, AtomicStats& counted,
                         std::shared_ptr<const TlsContext> tls)
    : url_(options.url),
      location_(options.location),
      layout_(options.layout),
      read_only_(options.read_only),
      timeout_(options.timeout),
      max_value_(max_value),
      counted_(counted),
      dialer_(options.location, options.timeout, std::move(tls), options.resolver, counted) {
  if (!url_.user.empty()) {
    authorization_ = "Authorization: Basic " + base64(url_.user + ":" + url_.password) + "\r\n";
  } else if (!options.bearer_token.empty()) {
    authorization_ = "Authorization: Bearer " + options.bearer_token + "\r\n";
  }
}

HttpBackend::~HttpBackend() {
  if (connector_.joinable()) connector_.join();
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
      auto opened = dialer_.open(url_.endpoint, deadline);
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
    return fail(Errc::io, location_, ": ", doing, " ",
                timeout ? dialer_.timed_out() : "failed: " + error);
  }
}

Result<HttpBackend::Answer> HttpBackend::call(std::string_view method, const std::string& path,
                                              std::string_view body, std::uint64_t limit) {
  const Clock::time_point deadline = remote_deadline(timeout_);
  std::optional<ConnectionPtr> idle;
  switch (pool_.take(deadline, idle)) {
    case Pool<ConnectionPtr>::Taken::timed_out:
      counted_.add(Stat::remote_timeouts);
      return fail(Errc::io, location_, ": ", dialer_.timed_out());
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
  return open_backend_tier<HttpBackend>(options);
}

}  // namespace cubby
