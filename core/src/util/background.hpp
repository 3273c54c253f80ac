// Background: jobs run in order on one thread of their own, off the caller's path.
//
// Used by the orchestrator for work a lookup's caller need not wait for (writing a verified
// remote entry to the disk tier). The thread starts with the first job. A job that is queued is
// run unless the process dies first: what a job does must be safe to lose (a cache fill), never
// needed for correctness. `drain` (and the destructor) wait until every queued job has run.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace cubby {

class Background {
 public:
  Background() = default;
  ~Background();  // drains, then stops the thread
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  // Queues `job`; true. False (nothing queued, the caller should do the work itself) when
  // `max_queued` jobs are already waiting or the worker thread cannot be started.
  bool post(std::function<void()> job, std::size_t max_queued = 64);

  // Waits until every job queued so far has run.
  void drain();
  // Waits until every job queued so far has run, at most `bound`; the jobs still queued then are
  // dropped (destroyed unrun) and counted in the result. A job already running is not waited for
  // past the bound: its own work must be bounded (the remote tier's writes are).
  std::size_t drain_for(std::chrono::milliseconds bound);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> jobs_;
  bool running_job_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace cubby
