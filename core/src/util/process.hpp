// Child processes and the cores they run on: what `cubby warm`, its worker pool, prefetch and the
// benchmarks share.
#pragma once

#include <sys/types.h>

#include <chrono>

namespace cubby {

// The cores this process may run on (its affinity mask), at least 1.
unsigned usable_cores();

// Reaps child `pid` if it exits within `bound` (0: only if it has already); false if it has not.
// Waits on a pidfd (no polling delay), else polls every millisecond.
bool reaped_within(pid_t pid, std::chrono::milliseconds bound);

}  // namespace cubby
