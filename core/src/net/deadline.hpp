// The deadline of remote calls: each call ends within its timeout of its start, and never after
// the cap its thread has set (the write-behind queue caps its writes by a drain's bound, so that
// a drain returns in time even while a write drips).
#pragma once

#include <algorithm>
#include <chrono>

namespace cubby {

using RemoteClock = std::chrono::steady_clock;
// When a remote call must have ended (remote_deadline).
using RemoteDeadline = RemoteClock::time_point;

// Whether `deadline` has passed.
inline bool passed(RemoteDeadline deadline) { return RemoteClock::now() >= deadline; }

// The cap of calls made on this thread; time_point::max() when none is set.
inline RemoteClock::time_point& remote_call_cap() {
  thread_local RemoteClock::time_point cap = RemoteClock::time_point::max();
  return cap;
}

// Sets this thread's cap for its lifetime (restoring the previous one).
class ScopedCallCap {
 public:
  explicit ScopedCallCap(RemoteClock::time_point cap) : previous_(remote_call_cap()) {
    remote_call_cap() = std::min(previous_, cap);
  }
  ~ScopedCallCap() { remote_call_cap() = previous_; }
  ScopedCallCap(const ScopedCallCap&) = delete;
  ScopedCallCap& operator=(const ScopedCallCap&) = delete;

 private:
  RemoteClock::time_point previous_;
};

// The deadline of a call starting now with `timeout`, under this thread's cap.
inline RemoteDeadline remote_deadline(std::chrono::milliseconds timeout) {
  return std::min(RemoteClock::now() + timeout, remote_call_cap());
}

}  // namespace cubby
