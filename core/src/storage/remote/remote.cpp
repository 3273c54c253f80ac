#include "storage/remote/remote.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "storage/remote/redis.hpp"
#include "storage/remote/redis_url.hpp"

namespace cubby {
namespace {

std::unique_ptr<RemoteTier> open_redis(const Config& config, RemoteOptions options) {
  auto url = parse_redis_url(config.remote_url);
  if (!url) {
    std::fprintf(stderr, "cubby: CUBBY_REMOTE (%s) is not usable: %s; running without a remote\n",
                 options.location.c_str(), url.error().message.c_str());
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

// One backend per URL scheme: a new backend is a line here (plus its RemoteBackend).
constexpr RemoteScheme kSchemes[] = {
    {"redis://", open_redis},
    {"rediss://", open_redis},
    {"unix://", open_redis},
    {"redis+unix://", open_redis},
};

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

std::string redact_remote_url(std::string_view url) {
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

std::span<const RemoteScheme> remote_schemes() { return kSchemes; }

std::unique_ptr<RemoteTier> open_remote_tier(const Config& config,
                                             std::span<const RemoteScheme> schemes) {
  if (config.remote_url.empty()) return nullptr;
  RemoteOptions options;
  options.location = redact_remote_url(config.remote_url);
  options.secret = config.remote_secret;
  options.read_only = config.remote_read_only || config.read_only;
  options.timeout = std::chrono::milliseconds(config.remote_timeout_ms);
  options.backoff = std::chrono::milliseconds(config.remote_backoff_ms);
  options.max_entry = config.remote_max_entry;
  options.compress = config.remote_compress;
  for (const RemoteScheme& scheme : schemes) {
    if (config.remote_url.starts_with(scheme.prefix))
      return scheme.open(config, std::move(options));
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

}  // namespace cubby
