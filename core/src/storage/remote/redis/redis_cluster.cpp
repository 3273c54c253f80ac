#include "storage/remote/redis/redis_cluster.hpp"

#include <algorithm>
#include <charconv>
#include <string>

namespace cubby {
namespace {

std::uint16_t crc16(std::string_view bytes) {
  std::uint16_t crc = 0;
  for (const char c : bytes) {
    crc = static_cast<std::uint16_t>(crc ^ (static_cast<std::uint8_t>(c) << 8));
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<std::uint16_t>((crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
  }
  return crc;
}

template <class Int>
bool parse_number(std::string_view text, Int& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

// "host:port" (host may be empty or an IPv6 address: the port follows the last ':').
std::optional<Endpoint> parse_address(std::string_view address, const Endpoint& self) {
  const auto colon = address.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  Endpoint out;
  if (!parse_number(address.substr(colon + 1), out.port) || out.port <= 0 || out.port > 65535) {
    return std::nullopt;
  }
  out.host = std::string(address.substr(0, colon));
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  if (out.host.empty()) out.host = self.host;
  return out;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0; start <= text.size();) {
    const auto end = std::min(text.find(separator, start), text.size());
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

int cluster_slot(std::string_view key) {
  if (const auto open = key.find('{'); open != std::string_view::npos) {
    const auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16(key) % kClusterSlots;
}

Result<SlotMap> parse_cluster_nodes(std::string_view nodes, const Endpoint& self) {
  SlotMap map;
  map.owner.fill(-1);
  for (std::string_view line : split(nodes, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::vector<std::string_view> fields = split(line, ' ');
    if (fields.empty()) continue;
    if (fields.size() < 8) {
      return fail(Errc::invalid_argument, "a CLUSTER NODES line has ",
                  std::to_string(fields.size()), " fields (8 or more expected)");
    }
    const std::vector<std::string_view> flags = split(fields[2], ',');
    auto has = [&](std::string_view flag) {
      return std::find(flags.begin(), flags.end(), flag) != flags.end();
    };
    if (!has("master") || has("fail") || has("noaddr") || has("handshake")) continue;
    const std::string_view address = fields[1].substr(0, fields[1].find_first_of("@,"));
    auto endpoint = parse_address(address, self);
    if (!endpoint) {
      return fail(Errc::invalid_argument,
                  "a CLUSTER NODES line has no address: ", std::string(fields[1]));
    }
    if (has("myself") && endpoint->host.empty()) endpoint->host = self.host;
    const auto index = static_cast<std::int16_t>(map.masters.size());
    bool serves = false;
    for (std::size_t i = 8; i < fields.size(); ++i) {
      const std::string_view range = fields[i];
      if (range.starts_with('[')) continue;  // a slot being imported or migrated
      const auto dash = range.find('-');
      int first = 0;
      int last = 0;
      if (!parse_number(range.substr(0, dash), first) ||
          !parse_number(
              dash == std::string_view::npos ? range.substr(0, dash) : range.substr(dash + 1),
              last) ||
          first < 0 || last >= kClusterSlots || first > last) {
        return fail(Errc::invalid_argument,
                    "a CLUSTER NODES line has a bad slot range: ", std::string(range));
      }
      for (int slot = first; slot <= last; ++slot) {
        map.owner[static_cast<std::size_t>(slot)] = index;
      }
      serves = true;
    }
    if (serves) map.masters.push_back(*endpoint);
  }
  if (map.masters.empty()) {
    return fail(Errc::invalid_argument, "CLUSTER NODES names no master that serves slots");
  }
  return map;
}

std::optional<Redirect> parse_redirect(std::string_view error, const Endpoint& from) {
  Redirect out;
  if (error.starts_with("MOVED ")) {
    error.remove_prefix(6);
  } else if (error.starts_with("ASK ")) {
    error.remove_prefix(4);
    out.ask = true;
  } else {
    return std::nullopt;
  }
  const auto space = error.find(' ');
  if (space == std::string_view::npos || !parse_number(error.substr(0, space), out.slot) ||
      out.slot < 0 || out.slot >= kClusterSlots) {
    return std::nullopt;
  }
  auto to = parse_address(error.substr(space + 1), from);
  if (!to) return std::nullopt;
  out.to = std::move(*to);
  return out;
}

}  // namespace cubby
