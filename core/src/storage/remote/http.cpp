#include "storage/remote/http.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <utility>

#include "storage/remote/curl_library.hpp"
#include "storage/remote/deadline.hpp"

namespace cubby {
namespace {

using Clock = std::chrono::steady_clock;

// The loaded libcurl; requires curl_api() to have succeeded (true wherever a CURL* exists: only
// the loaded library makes them).
const CurlApi& loaded_curl() { return curl_api().value(); }

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

// What one transfer collects: the body of a 2xx answer, up to `limit`.
struct Transfer {
  CURL* handle = nullptr;
  std::uint64_t limit = 0;
  bool too_big = false;
  std::string body;
  std::string_view upload;
  std::size_t uploaded = 0;
};

bool success(long status) { return status >= 200 && status < 300; }

long status_of(CURL* handle) {
  long status = 0;
  loaded_curl().easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
  return status;
}

// Keeps a 2xx body, up to the limit: past it the transfer is aborted (0: CURLE_WRITE_ERROR).
// Bodies of other answers (error pages) are read and dropped.
std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  Transfer& transfer = *static_cast<Transfer*>(user);
  const std::size_t bytes = size * count;
  if (!success(status_of(transfer.handle))) return bytes;
  if (transfer.body.size() + bytes > transfer.limit) {
    transfer.too_big = true;
    return 0;
  }
  transfer.body.append(data, bytes);
  return bytes;
}

std::size_t on_upload(char* buffer, std::size_t size, std::size_t count, void* user) {
  Transfer& transfer = *static_cast<Transfer*>(user);
  const std::size_t bytes = std::min(size * count, transfer.upload.size() - transfer.uploaded);
  std::copy_n(transfer.upload.data() + transfer.uploaded, bytes, buffer);
  transfer.uploaded += bytes;
  return bytes;
}

bool tls_failure(CURLcode code) {
  return code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CONNECT_ERROR ||
         code == CURLE_SSL_CACERT_BADFILE || code == CURLE_SSL_CERTPROBLEM;
}

const char* env_or_null(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
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
    if (!digits || (!port.empty() && std::stoul(std::string(port)) > 65535)) {
      return bad("the URL's port is not a number up to 65535");
    }
  }
  parsed.base = std::string(scheme).append(host);
  if (!port.empty()) parsed.base.append(":").append(port);
  parsed.base.append(path);
  while (parsed.base.ends_with('/')) parsed.base.pop_back();
  return parsed;
}

Result<HttpLayout> parse_http_layout(std::string_view name) {
  if (name == "flat") return HttpLayout::flat;
  if (name == "bazel") return HttpLayout::bazel;
  return fail(Errc::invalid_argument, "layout=", std::string(name),
              " is not a layout; use layout=flat (<prefix>/<key>, the default) or layout=bazel "
              "(<prefix>/ac/<64 hex digits>, for bazel-remote)");
}

void HttpBackend::HandleFree::operator()(void* handle) const { loaded_curl().easy_cleanup(handle); }

HttpBackend::HttpBackend(const HttpOptions& options, std::uint64_t max_value, AtomicStats& counted)
    : url_(options.url),
      location_(options.location),
      layout_(options.layout),
      ca_file_(options.ca_file),
      read_only_(options.read_only),
      timeout_(options.timeout),
      max_value_(max_value),
      counted_(counted) {
  if (url_.user.empty() && !options.bearer_token.empty()) {
    authorization_ = "Authorization: Bearer " + options.bearer_token;
  }
  // libcurl reads neither variable itself; OpenSSL's own default verify paths do.
  if (ca_file_.empty()) {
    if (const char* file = env_or_null("SSL_CERT_FILE")) ca_file_ = file;
    if (const char* dir = env_or_null("SSL_CERT_DIR")) ca_dir_ = dir;
  }
}

HttpBackend::~HttpBackend() {
  if (connector_.joinable()) connector_.join();
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

std::string HttpBackend::url_of(const Key& key) const {
  return url_.base + "/" + key_path(key, layout_);
}

void HttpBackend::warn_once(std::atomic<bool>& flag, const std::string& message) {
  if (!flag.exchange(true)) std::fprintf(stderr, "cubby: %s\n", message.c_str());
}

std::string HttpBackend::timed_out() const {
  return "timed out after " + std::to_string(timeout_.count()) +
         " ms (CUBBY_REMOTE_TIMEOUT_MS, the bound of each whole call: connect and answer "
         "included)";
}

Result<HttpBackend::Handle> HttpBackend::pooled_handle(Clock::time_point deadline) {
  std::optional<Handle> idle;
  switch (pool_.take(deadline, idle)) {
    case Pool<Handle>::Taken::idle:
      return std::move(*idle);
    case Pool<Handle>::Taken::timed_out:
      counted_.add(Stat::remote_timeouts);
      return fail(Errc::io, location_, ": ", timed_out());
    case Pool<Handle>::Taken::ahead_failed:  // skipped, as the breaker it tripped would skip it
      counted_.add(Stat::remote_skipped);
      return fail(Errc::io, location_, " failed to connect just now; skipped");
    case Pool<Handle>::Taken::none:
      break;
  }
  return new_handle();
}

Result<HttpBackend::Handle> HttpBackend::new_handle() const {
  const auto& loaded = curl_api();
  if (!loaded) return fail(Errc::io, location_, ": ", loaded.error().message);
  Handle handle(loaded->easy_init());
  if (!handle) return fail(Errc::io, "out of memory opening a connection to ", location_);
  return handle;
}

Result<HttpBackend::Answer> HttpBackend::call(std::string_view method, const std::string& url,
                                              std::string_view body, std::uint64_t limit) {
  const Clock::time_point deadline = remote_deadline(timeout_);
  auto pooled = pooled_handle(deadline);
  if (!pooled) return std::move(pooled).error();
  auto answer = request(pooled->get(), method, url, body, limit, deadline);
  pool_.put(std::move(pooled).value());  // curl closes a connection that cannot be reused
  return answer;
}

Result<HttpBackend::Answer> HttpBackend::request(void* handle, std::string_view method,
                                                 const std::string& url, std::string_view body,
                                                 std::uint64_t limit, Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) {
    counted_.add(Stat::remote_timeouts);
    return fail(Errc::io, location_, ": ", timed_out());
  }
  const CurlApi& api = loaded_curl();
  CURL* curl = handle;
  api.easy_reset(curl);  // options only: the open connection and the DNS cache are kept
  Transfer transfer;
  transfer.handle = curl;
  transfer.limit = limit;
  transfer.upload = body;
  char error[CURL_ERROR_SIZE] = "";
  curl_slist* headers = nullptr;
  headers = api.slist_append(headers, "Expect:");  // no 100-continue round trip before a PUT
  if (!authorization_.empty()) headers = api.slist_append(headers, authorization_.c_str());
  if (method == "PUT") {
    headers = api.slist_append(headers, "Content-Type: application/octet-stream");
  }
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(headers, api.slist_free_all);
  api.easy_setopt(curl, CURLOPT_URL, url.c_str());
  api.easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  api.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  api.easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  api.easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  api.easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(left.count()));
  api.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(left.count()));
  api.easy_setopt(curl, CURLOPT_HTTPHEADER, header_list.get());
  api.easy_setopt(curl, CURLOPT_USERAGENT, "cubby");
  api.easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  api.easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!ca_file_.empty()) api.easy_setopt(curl, CURLOPT_CAINFO, ca_file_.c_str());
  if (!ca_dir_.empty()) api.easy_setopt(curl, CURLOPT_CAPATH, ca_dir_.c_str());
  if (!url_.user.empty()) {
    api.easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    api.easy_setopt(curl, CURLOPT_USERNAME, url_.user.c_str());
    api.easy_setopt(curl, CURLOPT_PASSWORD, url_.password.c_str());
  }
  api.easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  api.easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  if (limit < UINT64_MAX) {  // a declared Content-Length over it fails before the body is read
    api.easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(limit));
  }
  if (method == "HEAD") {
    api.easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (method == "PUT") {
    api.easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    api.easy_setopt(curl, CURLOPT_READFUNCTION, on_upload);
    api.easy_setopt(curl, CURLOPT_READDATA, &transfer);
    api.easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(body.size()));
  } else if (method != "GET") {
    api.easy_setopt(curl, CURLOPT_CUSTOMREQUEST, std::string(method).c_str());
  }
  const CURLcode code = api.easy_perform(curl);
  const long status = status_of(curl);
  // The handle is pooled: it must not point at this call's buffers, headers or transfer.
  api.easy_reset(curl);
  const std::string doing = std::string(method) + " " + url.substr(url_.base.size());
  if (code == CURLE_FILESIZE_EXCEEDED || (code == CURLE_WRITE_ERROR && transfer.too_big)) {
    counted_.add(Stat::remote_rejected);
    return fail(Errc::corrupt, location_, ": the answer to ", doing,
                " is over CUBBY_REMOTE_MAX_ENTRY; not read");
  }
  if (code == CURLE_OPERATION_TIMEDOUT) {
    counted_.add(Stat::remote_timeouts);
    return fail(Errc::io, location_, ": ", doing, " ", timed_out());
  }
  if (code != CURLE_OK) {
    counted_.add(Stat::remote_errors);
    const std::string what = *error != '\0' ? error : api.easy_strerror(code);
    if (tls_failure(code)) {
      return fail(Errc::io, location_, ": TLS failed (", what,
                  "); set CUBBY_REMOTE_CA_FILE to the CA that signed the server's certificate");
    }
    return fail(Errc::io, location_, ": ", doing, " failed: ", what);
  }
  return Answer{status, std::move(transfer.body)};
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
  auto answer = call("GET", url_of(key), {}, max_value_);
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
  auto answer = call("PUT", url_of(key), bytes, UINT64_MAX);
  if (!answer) {
    counted_.add(Stat::remote_writes_dropped);
    return std::move(answer).error();
  }
  const long status = answer->status;
  if (success(status)) {
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
  auto answer = call("DELETE", url_of(key), {}, UINT64_MAX);
  if (!answer) return std::move(answer).error();
  if (success(answer->status) || answer->status == 404) return {};
  return unexpected("DELETE", answer->status);
}

void HttpBackend::connect_ahead(std::function<void(const Failure&)> failed) {
  if (!pool_.begin_ahead()) return;
  auto run = [this, failed = std::move(failed)] {
    // Any HTTP answer means connected; the handle is pooled with its open connection.
    auto handle = new_handle();
    Result<Answer> answer = handle ? request(handle->get(), "HEAD", url_.base + "/", {}, UINT64_MAX,
                                             remote_deadline(timeout_))
                                   : Result<Answer>(handle.error());
    if (!answer) failed(answer.error());
    pool_.end_ahead(answer && handle ? std::optional<Handle>(std::move(handle).value())
                                     : std::nullopt);
  };
  try {
    connector_ = std::thread(std::move(run));
  } catch (const std::system_error&) {  // no thread: the first lookup connects, as without this
    pool_.cancel_ahead();
  }
}

std::string http_unavailable() {
  const auto& loaded = curl_api();
  return loaded ? std::string() : loaded.error().message;
}

std::unique_ptr<RemoteTier> open_http_remote(const HttpOptions& options) {
  auto counted = std::make_shared<AtomicStats>();
  auto backend =
      std::make_unique<HttpBackend>(options, Envelope::max_value(options.max_entry), *counted);
  return std::make_unique<RemoteTier>(std::move(backend), options, std::move(counted));
}

}  // namespace cubby
