// Keys for tests against a real remote another test process may share (each filled with `fill`,
// with this process's id in its last two bytes), and the check of a tier's counters after one
// clean round trip.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "cubby/key.hpp"
#include "cubby/stats.hpp"

namespace cubby::testing {

inline Key process_key(std::uint8_t fill) {
  Key key;
  key.bytes.fill(fill);
  key.bytes[15] = static_cast<std::uint8_t>(::getpid() & 0xff);
  key.bytes[14] = static_cast<std::uint8_t>((::getpid() >> 8) & 0xff);
  return key;
}

// A tier that wrote then read one value of `bytes` bytes counted exactly that, and no failure.
inline void expect_one_clean_round_trip(const Stats& counters, std::size_t bytes) {
  EXPECT_EQ(counters.remote_writes, 1u);
  EXPECT_EQ(counters.remote_bytes_written, bytes);
  EXPECT_EQ(counters.remote_bytes_read, bytes);
  EXPECT_EQ(counters.remote_errors + counters.remote_timeouts + counters.remote_skipped +
                counters.remote_rejected,
            0u);
}

}  // namespace cubby::testing
