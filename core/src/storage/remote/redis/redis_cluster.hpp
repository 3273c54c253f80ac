// Redis Cluster's routing, pure: the hash slot of a key, the slot map read from CLUSTER NODES,
// and the redirections (-MOVED / -ASK) a node answers for a slot it does not serve.
// RedisBackend (redis.hpp) follows them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "cubby/error.hpp"
#include "net/connection.hpp"

namespace cubby {

constexpr int kClusterSlots = 16384;

// The slot of `key`: CRC16 (XMODEM) of the key, or of its hash tag ({...}) when it has a
// non-empty one, modulo 16384 (the Redis Cluster specification).
int cluster_slot(std::string_view key);

// Which master serves each slot.
struct SlotMap {
  std::vector<Endpoint> masters;
  std::array<std::int16_t, kClusterSlots> owner{};  // index into masters; -1: no master

  // The master serving `slot`, or nullptr.
  const Endpoint* node(int slot) const {
    const int at = owner[static_cast<std::size_t>(slot)];
    return at < 0 ? nullptr : &masters[static_cast<std::size_t>(at)];
  }
};

// The slot map in `nodes`, a CLUSTER NODES reply (one line per node: id, ip:port@cport[,host],
// flags, master, ping, pong, epoch, link state, slots "a-b" or "a"). A node that gives no address
// (":port") is `self` (the node asked), as Redis writes it before it learns its own address.
// Masters flagged as failed serve nothing. invalid_argument when the text is not such a reply.
Result<SlotMap> parse_cluster_nodes(std::string_view nodes, const Endpoint& self);

// A -MOVED or -ASK error reply: the slot and where to ask instead.
struct Redirect {
  bool ask = false;  // ASK: ask there once (after ASKING); MOVED: the slot lives there now
  int slot = 0;
  Endpoint to;
};

// The redirection in `error` ("MOVED 3999 10.0.0.2:6381", "ASK 3999 :6381"), or nullopt when it is
// not one. An empty host is `from`'s host (the node that answered).
std::optional<Redirect> parse_redirect(std::string_view error, const Endpoint& from);

}  // namespace cubby
