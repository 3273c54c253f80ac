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
    threads_.emplace_back([this, plan = std::move(plan)] { run(&plan); });
    for (std::size_t i = 1; i < kFetchers; ++i) threads_.emplace_back([this] { run(nullptr); });
  } catch (const std::system_error&) {
    if (threads_.empty()) {
      planned_ = true;  // no thread, no plan: every lookup goes to the remote
    }
  }
}

ReadAheadRemote::~ReadAheadRemote() { stop(); }

void ReadAheadRemote::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
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

void ReadAheadRemote::run(const std::function<ReadAheadPlan(Remote&)>* plan) {
  try {
    if (plan != nullptr) {
      ReadAheadPlan planned = (*plan)(*inner_);
      std::lock_guard lock(mutex_);
      for (const Key& key : planned.keys) {
        if (slots_.try_emplace(key).second) order_.push_back(key);
      }
      after_ = std::move(planned.after);
      planned_ = true;
    }
    changed_.notify_all();
    fetch();
  } catch (const std::exception&) {  // out of memory: the lookups go to the remote themselves
    {
      std::lock_guard lock(mutex_);
      planned_ = true;
      ended_ = true;
      slots_.clear();
      held_ = 0;
    }
    changed_.notify_all();
  }
}

void ReadAheadRemote::fetch() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return planned_ || stopping_; });
  while (!stopping_ && !ended_ && held_ <= max_bytes_) {
    // The next key of the plan that no lookup took off the list.
    while (next_ < order_.size() && !slots_.contains(order_[next_])) ++next_;
    if (next_ == order_.size()) break;
    const Key key = order_[next_++];
    slots_[key].state = State::fetching;
    lock.unlock();
    auto value = inner_->get(key);
    lock.lock();
    if (!value) ended_ = true;  // the remote failed: the breaker skips it from now on anyway
    const auto slot = slots_.find(key);
    if (slot != slots_.end()) {  // else the lookup that waited for it gave up
      if (value && *value) {
        held_ += (*value)->size();
        counted_.add(Stat::remote_read_ahead);
      }
      slot->second = {State::ready, std::move(value)};
    }
    changed_.notify_all();
  }
}

std::optional<Result<std::optional<std::string>>> ReadAheadRemote::take(const Key& key) {
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
  return std::nullopt;
}

Result<std::optional<std::string>> ReadAheadRemote::get(const Key& key) {
  if (auto taken = take(key)) return std::move(*taken);
  return inner_->get(key);
}

Result<std::optional<std::string>> ReadAheadRemote::get_checked(const Key& key,
                                                                const ValueCheck& check) {
  if (auto taken = take(key)) {
    if (!*taken || !**taken || check(***taken)) return std::move(*taken);
  }
  return inner_->get_checked(key, check);
}

Stats ReadAheadRemote::counters() const {
  Stats out = inner_->counters();
  out += counted_.snapshot();
  return out;
}

}  // namespace cubby
