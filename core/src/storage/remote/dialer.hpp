// Dialer: how a remote backend (redis/, http/) opens its connections (net/connection.hpp): to an
// endpoint, under the remote's TLS context and resolver, by a call's deadline, each failure
// counted (remote_timeouts when the deadline passed, else remote_errors) and said with the
// remote's location. open_backend_tier: a backend of either protocol made and wrapped as a
// RemoteTier, with the TLS context its URL asks for.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "cubby/error.hpp"
#include "net/connection.hpp"
#include "net/deadline.hpp"
#include "net/endpoint.hpp"
#include "net/resolver.hpp"
#include "net/tls_context.hpp"
#include "stats/atomic_stats.hpp"
#include "storage/remote/envelope.hpp"
#include "storage/remote/remote.hpp"

namespace cubby {

class Dialer {
 public:
  // `location`: the remote's redacted URL; `timeout`: the bound of each whole call
  // (CUBBY_REMOTE_TIMEOUT_MS, named when a call runs out of it); `tls`: null for plain
  // connections; `resolver`: nullptr for getaddrinfo; `counted`: the backend's counters.
  Dialer(std::string location, std::chrono::milliseconds timeout,
         std::shared_ptr<const TlsContext> tls, Resolver resolver, AtomicStats& counted)
      : location_(std::move(location)),
        timeout_(timeout),
        tls_(std::move(tls)),
        resolver_(std::move(resolver)),
        counted_(counted) {}

  // A new connection to `endpoint` by `deadline`. Errc::io, counted, with the location and why:
  // a timeout (said as timed_out()) when the deadline passed, before or while connecting (then
  // nothing is tried), else what failed (resolving, connecting, the TLS handshake).
  Result<std::unique_ptr<Connection>> open(const Endpoint& endpoint, RemoteDeadline deadline) const;

  // What a call that ran out of its time says: the timeout and the setting that bounds it.
  std::string timed_out() const;

 private:
  std::string location_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<const TlsContext> tls_;
  Resolver resolver_;
  AtomicStats& counted_;
};

// The TLS context of the remote at `location` (a redacted URL, for the message) when its URL asks
// for TLS (`wanted`), nullptr when it does not; nullopt when `settings` name a file that cannot
// be used, said on stderr (the process runs without a remote).
std::optional<std::shared_ptr<const TlsContext>> remote_tls_context(bool wanted,
                                                                    const TlsSettings& settings,
                                                                    const std::string& location);

// A remote tier over a `Backend` made from `options` (RemoteOptions with `url.tls` and `tls`: the
// TLS settings), its values bounded by the envelope's limit; nullptr (said on stderr) when its TLS
// settings name a file that cannot be used. Backend(options, max_value, counted, tls).
template <class Backend, class Options>
std::unique_ptr<RemoteTier> open_backend_tier(const Options& options) {
  auto tls = remote_tls_context(options.url.tls, options.tls, options.location);
  if (!tls) return nullptr;
  auto counted = std::make_shared<AtomicStats>();
  auto backend = std::make_unique<Backend>(options, Envelope::max_value(options.max_entry),
                                           *counted, std::move(*tls));
  return std::make_unique<RemoteTier>(std::move(backend), options, std::move(counted));
}

}  // namespace cubby
