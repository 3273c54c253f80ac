#include "storage/remote/read_ahead.hpp"

#include <exception>
#include <system_error>
#include <utility>

namespace cubby {

ReadAheadRemote::ReadAheadRemote(std::unique_ptr<Remote> inner,
                                 std::function<ReadAheadPlan(Remote&)> plan,
                                 std::chrono::milliseconds timeout, std::uint64_t max_bytes)
    : inner_(std::move(inner)), timeout_(timeout), max_bytes_(max_bytes) {
  try {
    thread_ = std::thread([this, plan = std::move(plan)] { run(plan); });
  } catch (const std::system_error&) {
    planned_ = true;  // no thread, no plan: every lookup goes to the remote
  }
}

ReadAheadRemote::~ReadAheadRemote() { stop(); }

void ReadAheadRemote::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::function<void()> after;
  {
    std::lock_guard lock(mutex_);
    planned_ = true;
    slots_.clear();
    held_ = 0;
    after = std::move(after_);
    after_ = nullptr;
  }
  if (after) after();
}

void ReadAheadRemote::run(const std::function<ReadAheadPlan(Remote&)>& plan) {
  try {
    read(plan);
  } catch (const std::exception&) {  // out of memory: the lookups go to the remote themselves
    {
      std::lock_guard lock(mutex_);
      planned_ = true;
      slots_.clear();
      held_ = 0;
    }
    changed_.notify_all();
  }
}

void ReadAheadRemote::read(const std::function<ReadAheadPlan(Remote&)>& plan) {
  ReadAheadPlan planned = plan(*inner_);
  std::vector<Key> order;
  {
    std::lock_guard lock(mutex_);
    for (const Key& key : planned.keys) {
      if (slots_.try_emplace(key).second) order.push_back(key);
    }
    after_ = std::move(planned.after);
    planned_ = true;
  }
  changed_.notify_all();
  for (const Key& key : order) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_ || held_ > max_bytes_) break;
      const auto slot = slots_.find(key);
      if (slot == slots_.end()) continue;  // a lookup took it off the list to fetch it itself
      slot->second.state = State::fetching;
    }
    auto value = inner_->get(key);
    const bool failed = !value;
    {
      std::lock_guard lock(mutex_);
      const auto slot = slots_.find(key);
      if (slot != slots_.end()) {  // else the lookup that waited for it gave up
        if (value && *value) {
          held_ += (*value)->size();
          counted_.add(Stat::remote_read_ahead);
        }
        slot->second = {State::ready, std::move(value)};
      }
    }
    changed_.notify_all();
    if (failed) break;
  }
}

Result<std::optional<std::string>> ReadAheadRemote::get(const Key& key) {
  {
    std::unique_lock lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    if (changed_.wait_until(lock, deadline, [&] { return planned_; })) {
      auto slot = slots_.find(key);
      if (slot != slots_.end() && slot->second.state == State::fetching) {
        changed_.wait_until(lock, deadline, [&] {
          slot = slots_.find(key);
          return slot == slots_.end() || slot->second.state != State::fetching;
        });
      }
      if (slot != slots_.end()) {
        Slot taken = std::move(slot->second);
        slots_.erase(slot);
        if (taken.state == State::ready) {
          if (taken.value && *taken.value) {
            held_ -= (*taken.value)->size();
            counted_.add(Stat::remote_read_ahead_taken);
          }
          return std::move(taken.value);
        }
        // Not reached yet, or still being fetched at the deadline: this lookup fetches it.
      }
    }
  }
  return inner_->get(key);
}

Stats ReadAheadRemote::counters() const {
  Stats out = inner_->counters();
  out += counted_.snapshot();
  return out;
}

}  // namespace cubby
