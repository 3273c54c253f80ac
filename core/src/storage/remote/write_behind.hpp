// WriteBehind: writes to a remote off the caller's path, on a Background thread. The queue is
// bounded by entries and bytes; a write that does not fit is dropped (counted
// remote_writes_dropped). `drain(bound)` waits for the queue at most `bound`, then drops (and
// counts) what is still queued; the writes it lets start, and the one in flight, end by then too
// (their calls are capped: net/deadline.hpp), so a drain returns in time even while a write drips.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "stats/atomic_stats.hpp"
#include "storage/tier.hpp"
#include "util/background.hpp"

namespace cubby {

class WriteBehind {
 public:
  WriteBehind(Tier& inner, std::size_t max_entries, std::uint64_t max_bytes, AtomicStats& counted);
  ~WriteBehind();  // waits for the write in flight (bounded by its call's deadline)
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;

  // Queues `bytes` to be put under `key`; returns at once.
  void put_later(const Key& key, std::string bytes);
  void drain(std::chrono::milliseconds bound);

 private:
  Tier& inner_;
  std::size_t max_entries_;
  std::uint64_t max_bytes_;
  AtomicStats& counted_;
  std::atomic<std::uint64_t> queued_bytes_{0};
  // While a drain runs: when it gives up (steady clock ns); max otherwise.
  std::atomic<std::int64_t> cap_ns_;
  Background writer_;  // last: destroyed (joined) first
};

}  // namespace cubby
