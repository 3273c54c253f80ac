#include "storage/remote/remote.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>

#include "storage/remote/http/http.hpp"
#include "storage/remote/layered.hpp"
#include "storage/remote/redis/redis.hpp"
#include "storage/remote/redis/redis_url.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

void warn_unusable(const RemoteOptions& options, const std::string& why) {
  std::fprintf(stderr, "cubby: CUBBY_REMOTE (%s) is not usable: %s; running without a remote\n",
               options.location.c_str(), why.c_str());
}

std::unique_ptr<RemoteTier> open_redis(const Config& config, RemoteOptions options) {
  if (!known_attributes(options, {})) return nullptr;
  auto url = parse_redis_url(config.remote_url);
  if (!url) {
    warn_unusable(options, url.error().message);
    return nullptr;
  }
  RedisOptions redis;
  static_cast<RemoteOptions&>(redis) = std::move(options);
  redis.url = std::move(url).value();
  redis.tls = TlsSettings{config.remote_ca_file, config.remote_cert_file, config.remote_key_file};
  redis.ttl_s = std::min(config.remote_ttl_s, kMaxRemoteTtlS);
  if (config.remote_ttl_s > kMaxRemoteTtlS) {  // a Config made in code (from_env refuses it)
    std::fprintf(stderr,
                 "cubby: remote_ttl_s %llu is over what Redis accepts; using %llu s (set 0 for "
                 "remote entries that never expire)\n",
                 static_cast<unsigned long long>(config.remote_ttl_s),
                 static_cast<unsigned long long>(kMaxRemoteTtlS));
  }
  return open_redis_remote(redis);
}

// The bearer token: CUBBY_REMOTE_TOKEN, else the first line of CUBBY_REMOTE_TOKEN_FILE; refused
// when it holds a control character (it is sent in a header line as it is).
Result<std::string> bearer_token(const Config& config) {
  std::string token = config.remote_token;
  if (token.empty() && !config.remote_token_file.empty()) {
    auto text = io::read_file(config.remote_token_file, 64 << 10);
    if (!text) {
      return fail(text.error().code, "CUBBY_REMOTE_TOKEN_FILE: ", text.error().message);
    }
    token = std::move(text).value();
    token.erase(std::min(token.find_first_of("\r\n"), token.size()));
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) {
      token.pop_back();
    }
  }
  if (std::any_of(token.begin(), token.end(),
                  [](char c) { return std::iscntrl(static_cast<unsigned char>(c)) != 0; })) {
    return fail(Errc::invalid_argument,
                "the bearer token (CUBBY_REMOTE_TOKEN or the first line of "
                "CUBBY_REMOTE_TOKEN_FILE) holds a control character; set it to the token alone");
  }
  return token;
}

std::unique_ptr<RemoteTier> open_http(const Config& config, RemoteOptions options) {
  if (!known_attributes(options, {"layout"})) return nullptr;
  auto url = parse_http_url(config.remote_url);
  if (!url) {
    warn_unusable(options, url.error().message);
    return nullptr;
  }
  HttpOptions http;
  for (const auto& [name, value] : options.attributes) {
    auto layout = parse_http_layout(value);  // the one attribute known_attributes let through
    if (!layout) {
      warn_unusable(options, layout.error().message);
      return nullptr;
    }
    http.layout = *layout;
  }
  auto token = bearer_token(config);
  if (!token) {
    warn_unusable(options, token.error().message);
    return nullptr;
  }
  static_cast<RemoteOptions&>(http) = std::move(options);
  http.url = std::move(url).value();
  http.bearer_token = std::move(token).value();
  http.tls = TlsSettings{config.remote_ca_file, config.remote_cert_file, config.remote_key_file};
  return open_http_remote(http);
}

// One backend per URL scheme: a new backend is a line here (plus its RemoteBackend).
constexpr RemoteScheme kSchemes[] = {
    {"redis://", open_redis},      {"rediss://", open_redis}, {"unix://", open_redis},
    {"redis+unix://", open_redis}, {"http://", open_http},    {"https://", open_http},
};

// One layer of CUBBY_REMOTE: "URL|attribute|name=value".
struct Layer {
  std::string url;
  bool read_only = false;
  std::vector<std::pair<std::string, std::string>> attributes;  // the others
};

// The layers of `value`: URLs separated by white space, each with its attributes.
std::vector<Layer> layers_of(std::string_view value) {
  std::vector<Layer> layers;
  std::size_t at = 0;
  while (at < value.size()) {
    if (std::isspace(static_cast<unsigned char>(value[at]))) {
      ++at;
      continue;
    }
    std::size_t end = at;
    while (end < value.size() && !std::isspace(static_cast<unsigned char>(value[end]))) ++end;
    const std::string_view text = value.substr(at, end - at);
    at = end;
    Layer layer;
    std::size_t bar = text.find('|');
    layer.url = std::string(text.substr(0, bar));
    while (bar != std::string_view::npos) {
      const std::size_t next = text.find('|', bar + 1);
      const std::string_view attribute = text.substr(bar + 1, next - bar - 1);
      bar = next;
      const std::size_t equals = attribute.find('=');
      std::string name(attribute.substr(0, equals));
      std::string setting = equals == std::string_view::npos
                                ? std::string()
                                : std::string(attribute.substr(equals + 1));
      if (name == "read-only" && setting.empty()) {
        layer.read_only = true;
      } else if (!name.empty()) {
        layer.attributes.emplace_back(std::move(name), std::move(setting));
      }
    }
    layers.push_back(std::move(layer));
  }
  return layers;
}

// A redacted URL (one layer's, without attributes).
std::string redact_one_url(std::string_view url) {
  for (std::string_view scheme : kRedisSchemes) {
    if (url.starts_with(scheme)) return redact_redis_url(url);
  }
  // Another scheme: whatever lies between "://" and the last '@' may be a credential.
  const std::size_t start = url.find("://");
  if (start == std::string_view::npos) return "(a CUBBY_REMOTE URL without a scheme://)";
  const std::size_t at = url.rfind('@');
  if (at == std::string_view::npos || at < start) return std::string(url);
  return std::string(url.substr(0, start + 3)) + "***" + std::string(url.substr(at));
}

// The remote of one layer, or nullptr (warned).
std::unique_ptr<RemoteTier> open_layer(const Config& config, const Layer& layer,
                                       std::span<const RemoteScheme> schemes) {
  RemoteOptions options;
  options.location = redact_one_url(layer.url);
  options.secret = config.remote_secret;
  options.read_only = config.remote_read_only || config.read_only || layer.read_only;
  options.timeout = std::chrono::milliseconds(config.remote_timeout_ms);
  options.backoff = std::chrono::milliseconds(config.remote_backoff_ms);
  options.max_entry = config.remote_max_entry;
  options.compress = config.remote_compress;
  options.attributes = layer.attributes;
  for (const RemoteScheme& scheme : schemes) {
    if (!layer.url.starts_with(scheme.prefix)) continue;
    Config one = config;
    one.remote_url = layer.url;
    return scheme.open(one, std::move(options));
  }
  std::string known;
  for (const RemoteScheme& scheme : schemes) {
    known += (known.empty() ? "" : ", ") + std::string(scheme.prefix);
  }
  std::fprintf(stderr,
               "cubby: CUBBY_REMOTE (%s) names no known remote (known: %s...); running without a "
               "remote\n",
               options.location.c_str(), known.c_str());
  return nullptr;
}

}  // namespace

RemoteTier::RemoteTier(std::unique_ptr<RemoteBackend> backend, const RemoteOptions& options,
                       std::shared_ptr<AtomicStats> counted)
    : location_(options.location),
      counted_(std::move(counted)),
      breaker_(*backend, options.backoff, options.location, *counted_),
      envelope_(
          breaker_,
          EnvelopeOptions{options.location, options.secret, options.compress, options.max_entry},
          *counted_),
      timeout_(options.timeout),
      backend_(std::move(backend)),
      writer_(envelope_, options.queue_entries, options.queue_bytes, *counted_) {}

RemoteTier::~RemoteTier() { drain(); }

void RemoteTier::put_later(const Key& key, std::string bytes) {
  if (!backend_->writable()) return;  // read mode: nothing is queued, nothing is counted
  writer_.put_later(key, std::move(bytes));
}

void RemoteTier::connect_ahead() {
  if (breaker_.is_open()) return;  // under the breaker like any call
  backend_->connect_ahead([this](const Failure& failure) { breaker_.trip(failure); });
}

bool known_attributes(const RemoteOptions& options, std::initializer_list<std::string_view> known) {
  for (const auto& [name, value] : options.attributes) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string takes = "read-only";
    for (std::string_view other : known) takes += ", " + std::string(other) + "=";
    warn_unusable(options, "|" + name + " is not an attribute of this kind of remote (it takes " +
                               takes + ")");
    return false;
  }
  return true;
}

std::string redact_remote_url(std::string_view url) {
  if (url.find("://") == std::string_view::npos) return redact_one_url(url);
  std::string redacted;
  for (const Layer& layer : layers_of(url)) {
    if (!redacted.empty()) redacted += ' ';
    redacted += redact_one_url(layer.url);
    if (layer.read_only) redacted += "|read-only";
    for (const auto& [name, value] : layer.attributes) {
      redacted += "|" + name + (value.empty() ? "" : "=" + value);
    }
  }
  return redacted;
}

std::span<const RemoteScheme> remote_schemes() { return kSchemes; }

std::unique_ptr<Remote> open_remote_tier(const Config& config,
                                         std::span<const RemoteScheme> schemes) {
  std::vector<std::unique_ptr<Remote>> layers;
  for (const Layer& layer : layers_of(config.remote_url)) {
    if (auto remote = open_layer(config, layer, schemes)) layers.push_back(std::move(remote));
  }
  if (layers.empty()) return nullptr;
  if (layers.size() == 1) return std::move(layers.front());
  return std::make_unique<LayeredRemote>(std::move(layers));
}

}  // namespace cubby
