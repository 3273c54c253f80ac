// HttpBackend: the remote backend over an HTTP(S) cache server (libcurl, loaded on first use: see
// curl_library.hpp; synchronous calls with deadlines); only bytes in and out: the envelope, breaker
// and write-behind queue are the wrappers of remote.hpp.
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
// opens a connection ahead (any answer counts as connected).
//
// Authentication: the URL's user:password (basic), else a bearer token (CUBBY_REMOTE_TOKEN or
// CUBBY_REMOTE_TOKEN_FILE). TLS: the server's certificate and name are always verified, against
// the CA file named by CUBBY_REMOTE_CA_FILE, else SSL_CERT_FILE / SSL_CERT_DIR when set, else the
// system store. Redirects are never followed (a 3xx answer is a failure that names the fix).
//
// Statuses: 401, 403 or 405 to a PUT make the backend read-only for the process (warned once: the
// server refuses writes); 507 or 413 to a PUT drop the write (warned once: the server is full);
// 429 and 5xx are failures of the remote (Errc::io: the breaker opens); 401/403 to a GET too.
// Other unexpected answers are Errc::corrupt, warned once.
//
// Deadlines: every call ends by remote_deadline(timeout) of its start (deadline.hpp), all of it
// included (waiting for a pooled handle, resolving, connecting, the TLS handshake, sending the
// request and reading the whole answer): CURLOPT_TIMEOUT_MS and CURLOPT_CONNECTTIMEOUT_MS are the
// time left. Size limit: a GET whose Content-Length is over `max_value` is refused before its body
// is read, and one without a length is aborted as soon as it passes the limit (counted
// remote_rejected). Connections are reused: one curl handle per concurrent caller, a few kept
// idle, each keeping its connection open.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "storage/remote/pool.hpp"
#include "storage/remote/remote.hpp"

namespace cubby {

// An http:// or https:// URL, taken apart.
struct HttpUrl {
  std::string base;  // scheme://host[:port][/prefix], without credentials or a trailing '/'
  std::string user, password;  // percent-decoded; empty user: none
};

// Parses `url` without libcurl (which loads on the first call, off the caller's start: a process
// whose store is warm never loads it); invalid_argument (saying what is wrong, without the
// credentials) when it is not an http(s) URL with a host, or has a query, a fragment, a space or
// control character, a bad %-escape or a port that is not a number up to 65535.
Result<HttpUrl> parse_http_url(std::string_view url);

enum class HttpLayout { flat, bazel };

// The layout named by a layout= attribute ("flat", "bazel"); invalid_argument otherwise.
Result<HttpLayout> parse_http_layout(std::string_view name);

// A remote over HTTP(S): the URL and its policies (RemoteOptions: the wrappers').
struct HttpOptions : RemoteOptions {
  HttpUrl url;
  HttpLayout layout = HttpLayout::flat;
  std::string bearer_token;  // sent when the URL has no user:password; empty: none
  std::string ca_file;       // empty: SSL_CERT_FILE / SSL_CERT_DIR when set, else the system store
};

class HttpBackend final : public RemoteBackend {
 public:
  HttpBackend(const HttpOptions& options, std::uint64_t max_value, AtomicStats& counted);
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
  struct HandleFree {
    void operator()(void* handle) const;
  };
  using Handle = std::unique_ptr<void, HandleFree>;  // a CURL easy handle
  using Clock = std::chrono::steady_clock;
  struct Answer {
    long status = 0;
    std::string body;  // of a 2xx answer only
  };

  // One request on a pooled handle by remote_deadline(timeout) of now (see request).
  Result<Answer> call(std::string_view method, const std::string& url, std::string_view body,
                      std::uint64_t limit);
  // One request on `handle` (a CURL*) by `deadline`: the answer, or a failure (counted). A 2xx
  // body longer than `limit` is refused (Errc::corrupt, counted remote_rejected).
  Result<Answer> request(void* handle, std::string_view method, const std::string& url,
                         std::string_view body, std::uint64_t limit, Clock::time_point deadline);
  // An idle pooled handle (after the one connect_ahead is opening), else a new one.
  Result<Handle> pooled_handle(Clock::time_point deadline);
  Result<Handle> new_handle() const;
  std::string url_of(const Key& key) const;
  // The failure of an answer with an unexpected `status` to `method` (counted, warned once).
  Failure unexpected(std::string_view method, long status);
  std::string timed_out() const;
  void warn_once(std::atomic<bool>& flag, const std::string& message);

  HttpUrl url_;
  std::string location_;
  HttpLayout layout_;
  std::string authorization_;  // "Authorization: Bearer ..." or empty
  std::string ca_file_, ca_dir_;
  bool read_only_;
  std::chrono::milliseconds timeout_;
  std::uint64_t max_value_;
  AtomicStats& counted_;

  Pool<Handle> pool_{4};  // idle handles, each keeping its connection open
  std::thread connector_;
  std::atomic<bool> writes_refused_{false};
  std::atomic<bool> warned_refused_{false};
  std::atomic<bool> warned_full_{false};
  std::atomic<bool> warned_status_{false};
};

// Why this process cannot use HTTP(S) remotes: curl_api()'s failure (what to install); "" when
// libcurl loads (this loads it). The http:// and https:// schemes' RemoteScheme::unavailable.
std::string http_unavailable();

// A remote tier over HTTP(S) with `options` (what open_remote_tier builds for http(s):// URLs).
std::unique_ptr<RemoteTier> open_http_remote(const HttpOptions& options);

}  // namespace cubby
