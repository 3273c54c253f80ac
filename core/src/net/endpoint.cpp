#include "net/endpoint.hpp"

namespace cubby {

std::string Endpoint::name() const {
  if (!unix_path.empty()) return unix_path;
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace cubby
