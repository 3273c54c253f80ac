#include "storage/remote/dialer.hpp"

#include <cstdio>

namespace cubby {

Result<std::unique_ptr<Connection>> Dialer::open(const Endpoint& endpoint,
                                                 RemoteDeadline deadline) const {
  if (passed(deadline)) {
    counted_.add(Stat::remote_timeouts);
    return fail(Errc::io, location_, ": cannot connect: ", timed_out());
  }
  bool timeout = false;
  auto opened = Connection::open(endpoint, tls_.get(), deadline, resolver_, timeout);
  if (!opened) {
    timeout = timeout || passed(deadline);
    counted_.add(timeout ? Stat::remote_timeouts : Stat::remote_errors);
    return fail(Errc::io, location_, ": ", timeout ? timed_out() : opened.error().message);
  }
  return std::move(opened).value();
}

std::string Dialer::timed_out() const {
  return "timed out after " + std::to_string(timeout_.count()) +
         " ms (CUBBY_REMOTE_TIMEOUT_MS, the bound of each whole call: connect and answer "
         "included)";
}

std::optional<std::shared_ptr<const TlsContext>> remote_tls_context(bool wanted,
                                                                    const TlsSettings& settings,
                                                                    const std::string& location) {
  if (!wanted) return std::shared_ptr<const TlsContext>();
  auto created = TlsContext::create(settings);
  if (!created) {
    std::fprintf(stderr, "cubby: CUBBY_REMOTE (%s) is not usable: %s; running without a remote\n",
                 location.c_str(), created.error().message.c_str());
    return std::nullopt;
  }
  return std::move(created).value();
}

}  // namespace cubby
