// redis_command: one Redis command sent on a connection (net/connection.hpp) and its reply read
// by a deadline, for RedisBackend (redis.hpp): the reply's first line checked whole before
// anything after it is read, a bulk value read straight into the string returned.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "net/connection.hpp"
#include "net/deadline.hpp"
#include "storage/remote/redis/redis.hpp"

struct redisReader;

namespace cubby {

// How a command ended when it gave no reply.
enum class CommandEnded { io, refused, protocol };

// Sends one command (binary-safe arguments) on `stream` and reads its reply, all before
// `deadline`: the answer (a bulk string read straight into it, anything else parsed by hiredis's
// `reader`), or an empty one and why: the connection failed or the deadline passed
// (`io`: stream.error(), stream.timed_out()), the reply is refused unread (`refused`): an array (no
// command the backend sends answers with one), a bulk value declared longer than `limit`, or a
// first line longer than 64 KiB; or it is not RESP (`protocol`). The reply's first line is checked
// whole before hiredis's reader parses any of it (the reader consumes the type byte of a partial
// reply), so a server that drips the length line cannot slip a value past the limit. After an
// empty answer the connection is out of step: close it.
RedisBackend::Answer redis_command(Connection& stream, redisReader& reader,
                                   std::initializer_list<std::string_view> args,
                                   RemoteDeadline deadline, std::uint64_t limit,
                                   CommandEnded& ended);

}  // namespace cubby
