// Counters a component counts from several threads (the remote tier), as one Stats on demand.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "cubby/stats.hpp"

namespace cubby {

class AtomicStats {
 public:
  // Adds `n` to a count or bytes counter (an ms counter is not counted here: it stays 0).
  void add(Stat stat, std::uint64_t n = 1) noexcept {
    values_[static_cast<std::size_t>(stat)].fetch_add(n, std::memory_order_relaxed);
  }

  // The counts so far, every other counter 0.
  Stats snapshot() const noexcept {
    Stats out;
    for (std::size_t i = 0; i < kStats.size(); ++i) {
      if (kStats[i].count != nullptr)
        out.*kStats[i].count = values_[i].load(std::memory_order_relaxed);
    }
    return out;
  }

 private:
  std::array<std::atomic<std::uint64_t>, kStats.size()> values_{};
};

}  // namespace cubby
