// Keys for tests against a Redis another test process may share: each filled with `fill`, with
// this process's id in its last two bytes.
#pragma once

#include <unistd.h>

#include <cstdint>

#include "cubby/key.hpp"

namespace cubby::testing {

inline Key process_key(std::uint8_t fill) {
  Key key;
  key.bytes.fill(fill);
  key.bytes[15] = static_cast<std::uint8_t>(::getpid() & 0xff);
  key.bytes[14] = static_cast<std::uint8_t>((::getpid() >> 8) & 0xff);
  return key;
}

}  // namespace cubby::testing
