// Background jobs; contract in background.hpp.
#include "util/background.hpp"

#include <system_error>
#include <utility>

namespace cubby {

Background::~Background() {
  {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return jobs_.empty() && !running_job_; });
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Background::post(std::function<void()> job, std::size_t max_queued) {
  std::unique_lock lock(mutex_);
  if (stopping_ || jobs_.size() >= max_queued) return false;
  if (!thread_.joinable()) {
    try {
      thread_ = std::thread([this] { loop(); });
    } catch (const std::system_error&) {  // out of threads: the caller runs the job itself
      return false;
    }
  }
  jobs_.push_back(std::move(job));
  lock.unlock();
  wake_.notify_one();
  return true;
}

void Background::drain() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return jobs_.empty() && !running_job_; });
}

std::size_t Background::drain_for(std::chrono::milliseconds bound) {
  std::deque<std::function<void()>> dropped;
  {
    std::unique_lock lock(mutex_);
    idle_.wait_for(lock, bound, [&] { return jobs_.empty() && !running_job_; });
    dropped.swap(jobs_);
    if (!running_job_) idle_.notify_all();
  }
  return dropped.size();  // destroyed here, outside the lock
}

void Background::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    running_job_ = true;
    lock.unlock();
    try {
      job();
    } catch (...) {  // a job is a cache fill: losing it is allowed, killing the process is not
    }
    lock.lock();
    running_job_ = false;
    if (jobs_.empty()) idle_.notify_all();
  }
}

}  // namespace cubby
