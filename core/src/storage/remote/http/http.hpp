// HttpBackend: the remote backend over an HTTP(S) cache server: HTTP/1.1 spoken by cubby itself
// over its connection layer (net/connection.hpp: TCP, the name resolved within the deadline,
// TLS with OpenSSL's libssl, every wait bounded); synchronous calls with deadlines; only bytes in
// and out: the envelope, breaker and write-behind queue are the wrappers of remote.hpp.
//
// Why not libcurl: Debian's libcurl brings ~26 libraries of its own (LDAP, Kerberos, GnuTLS via
// librtmp, SSH, ...), bound at load: ~6-7 ms of CPU in every process that uses an HTTP(S) remote,
// a quarter of a warm test process's whole run on the dev VM (issue 26's fleet first run). cubby
// needs four methods, Content-Length and chunked bodies and keep-alive: ~300 lines on the
// connection layer the Redis backends already share (TLS, deadlines, name resolution).
//
// URL: http[s]://[user:password@]host[:port][/prefix]. Values live at <prefix>/<path of the key>:
//   layout=flat (the default): <prefix>/<32 hex digits of the key>, for any server that stores
//     what is PUT and serves it back with GET (nginx with `dav_methods PUT DELETE` and
//     `create_full_put_path on`, Apache mod_dav, an object store behind HTTP);
//   layout=bazel: <prefix>/ac/<64 hex digits>, bazel-remote's action cache, which takes only
//     64-digit keys: the 32 digits of the key extended to 64 by repeating its leading digits (the
//     key's digits twice), as ccache's HTTP storage maps its 40-digit keys for bazel-remote. The
//     server must run with --disable_http_ac_validation (values are not Bazel ActionResults).
// Reads are GET (200: the value; 404 or 410: a miss), writes PUT, remove DELETE; HEAD of the prefix
// opens a connection ahead (any answer counts as connected). Proxies are not used (http_proxy and
// the like are ignored): the cache server is reached directly.
//
// Authentication: the URL's user:password (basic), else a bearer token (CUBBY_REMOTE_TOKEN or
// CUBBY_REMOTE_TOKEN_FILE). TLS (net/tls_context.hpp): the server's certificate and name are always
// verified, against the CA file named by CUBBY_REMOTE_CA_FILE, else OpenSSL's default store (which
// honours SSL_CERT_FILE and SSL_CERT_DIR); a client certificate (CUBBY_REMOTE_CERT_FILE,
// CUBBY_REMOTE_KEY_FILE) is shown when set; SNI. Redirects are never followed (a 3xx answer is a
// failure that names the fix).
//
// Statuses: 401, 403 or 405 to a PUT make the backend read-only for the process (warned once: the
// server refuses writes); 507 or 413 to a PUT drop the write (warned once: the server is full);
// 429 and 5xx are failures of the remote (Errc::io: the breaker opens); 401/403 to a GET too.
// Other unexpected answers are Errc::corrupt, warned once; an answer that is not HTTP/1.x is
// Errc::io.
//
// Deadlines: every call ends by remote_deadline(timeout) of its start (net/deadline.hpp), all of it
// included (waiting for a pooled connection, resolving, connecting, the TLS handshake, sending the
// request and reading the whole answer). Size limit: a GET whose Content-Length is over
// `max_value` is refused before its body is read, and a chunked or unframed one is aborted as soon
// as it passes the limit (counted remote_rejected). Connections are reused (keep-alive): a few
// kept idle; a request on a kept connection that the server closed meanwhile (its keep-alive
// timeout or request limit) is sent again once on a new connection.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "net/connection.hpp"
#include "net/pool.hpp"
#include "net/tls_context.hpp"
#include "storage/remote/dialer.hpp"
#include "storage/remote/remote.hpp"

namespace cubby {

// An http:// or https:// URL, taken apart.
struct HttpUrl {
  std::string base;  // scheme://host[:port][/prefix], without credentials or a trailing '/'
  std::string user, password;  // percent-decoded; empty user: none
  bool tls = false;            // https://
  Endpoint endpoint;           // host (an IPv6 address without brackets) and port (80 / 443)
  std::string authority;       // the Host header: host[:port] as the URL spells it
  std::string prefix;          // the path, as written: "" or "/..." without a trailing '/'
};

// Parses `url` (net/url.hpp's grammar); invalid_argument (saying what is wrong, without the
// credentials) when it is not an http(s) URL with one host, or has a query, a fragment, a space,
// a control character or one of \"<>, a bad %-escape or a port that is not a number from 1 to
// 65535.
Result<HttpUrl> parse_http_url(std::string_view url);

enum class HttpLayout { flat, bazel };

// The layout named by a layout= attribute ("flat", "bazel"); invalid_argument otherwise.
Result<HttpLayout> parse_http_layout(std::string_view name);

// A remote over HTTP(S): the URL and its policies (RemoteOptions: the wrappers').
struct HttpOptions : RemoteOptions {
  HttpUrl url;
  HttpLayout layout = HttpLayout::flat;
  std::string bearer_token;  // sent when the URL has no user:password; empty: none
  TlsSettings tls;           // https://: whom to trust, the client certificate
  Resolver resolver;         // nullptr: getaddrinfo (tests pass one that hangs)
};

class HttpBackend final : public RemoteBackend {
 public:
  // `tls`: the context of an https:// URL (nullptr for http://).
  HttpBackend(const HttpOptions& options, std::uint64_t max_value, AtomicStats& counted,
              std::shared_ptr<const TlsContext> tls);
  ~HttpBackend() override;  // joins connect_ahead's thread (bounded by the timeout)
  HttpBackend(const HttpBackend&) = delete;
  HttpBackend& operator=(const HttpBackend&) = delete;

  Result<std::optional<std::string>> get(const Key& key) override;
  Result<void> put(const Key& key, std::string_view bytes) override;
  Result<void> remove(const Key& key) override;
  void connect_ahead(std::function<void(const Failure&)> failed) override;
  bool writable() const override { return !read_only_ && !writes_refused_.load(); }

  // Where `key`'s value lives under the prefix: "<32 hex>" (flat) or "ac/<64 hex>" (bazel).
  static std::string key_path(const Key& key, HttpLayout layout);

 private:
  using ConnectionPtr = std::unique_ptr<Connection>;
  using Clock = std::chrono::steady_clock;
  struct Answer {
    long status = 0;
    std::string body;  // of a 2xx answer only
  };

  // One request by remote_deadline(timeout) of now, on a pooled connection or a new one.
  // `path`: under the prefix. A 2xx body longer than `limit` is refused (Errc::corrupt, counted
  // remote_rejected). Failures are counted.
  Result<Answer> call(std::string_view method, const std::string& path, std::string_view body,
                      std::uint64_t limit);
  // The request on `connection` (null: a new one) by `deadline`, as call() says; a kept
  // connection that the server closed meanwhile gets it again, once, on a new one. `connection`
  // is left holding the connection when it can carry another request, else null.
  Result<Answer> exchange(ConnectionPtr& connection, std::string_view method,
                          const std::string& path, std::string_view body, std::uint64_t limit,
                          Clock::time_point deadline);
  // The request's bytes: its head (and `body`).
  std::string request_bytes(std::string_view method, const std::string& path,
                            std::string_view body) const;
  // The failure of an answer with an unexpected `status` to `method` (counted, warned once).
  Failure unexpected(std::string_view method, long status);
  void warn_once(std::atomic<bool>& flag, const std::string& message);

  HttpUrl url_;
  std::string location_;
  HttpLayout layout_;
  std::string authorization_;  // "Authorization: ...\r\n" or empty
  bool read_only_;
  std::chrono::milliseconds timeout_;
  std::uint64_t max_value_;
  AtomicStats& counted_;
  Dialer dialer_;  // the server's connections

  Pool<ConnectionPtr> pool_{4};  // idle connections, kept open
  std::thread connector_;
  std::atomic<bool> writes_refused_{false};
  std::atomic<bool> warned_refused_{false};
  std::atomic<bool> warned_full_{false};
  std::atomic<bool> warned_status_{false};
};

// A remote tier over HTTP(S) with `options` (what open_remote_tier builds for http(s):// URLs);
// nullptr (said on stderr) when its TLS settings name a file that cannot be used.
std::unique_ptr<RemoteTier> open_http_remote(const HttpOptions& options);

}  // namespace cubby
