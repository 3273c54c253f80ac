// FakeBackend: an in-memory bytes backend (a RemoteBackend, storage/remote/remote.hpp) for testing
// the remote tier's wrappers in isolation. Its state lives in a FakeBackend::State the test keeps
// (the tier owns the backend): stored values, a scripted failure, call counts, the deadline of
// each put and how long a put takes.
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "net/deadline.hpp"
#include "storage/remote/remote.hpp"

namespace cubby::testing {

class FakeBackend final : public RemoteBackend {
 public:
  struct State {
    std::mutex mutex;
    std::map<std::string, std::string> values;  // by key hex
    std::optional<Failure> failure;             // while set, every get/put/remove fails with it
    std::optional<Failure> connect_failure;     // what connect_ahead reports, if set
    // connect_ahead reports on a thread of its own after this long (as Redis's does).
    std::chrono::milliseconds connect_takes{0};
    bool writable = true;
    std::chrono::milliseconds put_takes{0};   // a put sleeps this long, or until its deadline
    std::chrono::milliseconds timeout{1000};  // (remote_deadline of this timeout)
    int gets = 0, puts = 0, removes = 0, connects = 0;
    std::vector<RemoteClock::time_point> deadlines;  // the deadline of each put, in order
    std::vector<std::string> order;                  // key hex of each put, in order
  };

  explicit FakeBackend(std::shared_ptr<State> state) : state_(std::move(state)) {}
  ~FakeBackend() override {
    if (connector_.joinable()) connector_.join();
  }
  FakeBackend(const FakeBackend&) = delete;
  FakeBackend& operator=(const FakeBackend&) = delete;

  Result<std::optional<std::string>> get(const Key& key) override {
    std::lock_guard lock(state_->mutex);
    ++state_->gets;
    if (state_->failure) return *state_->failure;
    auto found = state_->values.find(key.hex());
    if (found == state_->values.end()) return std::optional<std::string>();
    return std::optional<std::string>(found->second);
  }
  Result<void> put(const Key& key, std::string_view bytes) override {
    RemoteClock::time_point done;
    {
      std::lock_guard lock(state_->mutex);
      ++state_->puts;
      const RemoteClock::time_point deadline = remote_deadline(state_->timeout);
      state_->deadlines.push_back(deadline);
      state_->order.push_back(key.hex());
      if (!state_->writable) return fail(Errc::invalid_argument, "fake: read-only");
      if (state_->failure) return *state_->failure;
      done = std::min(deadline, RemoteClock::now() + state_->put_takes);
    }
    std::this_thread::sleep_until(done);
    std::lock_guard lock(state_->mutex);
    state_->values[key.hex()] = std::string(bytes);
    return {};
  }
  Result<void> remove(const Key& key) override {
    std::lock_guard lock(state_->mutex);
    ++state_->removes;
    if (state_->failure) return *state_->failure;
    state_->values.erase(key.hex());
    return {};
  }
  void connect_ahead(std::function<void(const Failure&)> failed) override {
    std::optional<Failure> failure;
    std::chrono::milliseconds takes;
    {
      std::lock_guard lock(state_->mutex);
      ++state_->connects;
      failure = state_->connect_failure;
      takes = state_->connect_takes;
    }
    connector_ = std::thread([failure, takes, failed = std::move(failed)] {
      std::this_thread::sleep_for(takes);
      if (failure) failed(*failure);
    });
    if (takes.count() == 0) connector_.join();  // reported by the time the call returns
  }
  bool writable() const override {
    std::lock_guard lock(state_->mutex);
    return state_->writable;
  }

 private:
  std::shared_ptr<State> state_;
  std::thread connector_;
};

// `state`'s count `which` (&State::puts, ...), read under its lock.
inline int count_of(FakeBackend::State& state, int FakeBackend::State::*which) {
  std::lock_guard lock(state.mutex);
  return state.*which;
}

// A key whose 16 bytes are all `fill`.
inline Key fake_key(std::uint8_t fill) {
  Key key;
  key.bytes.fill(fill);
  return key;
}

// A RemoteTier over a FakeBackend with `options`; the test keeps `state`.
struct FakeRemote {
  explicit FakeRemote(const RemoteOptions& options = {})
      : state(std::make_shared<FakeBackend::State>()),
        tier(std::make_unique<RemoteTier>(std::make_unique<FakeBackend>(state), options,
                                          std::make_shared<AtomicStats>())) {}
  std::string stored(const Key& key) {
    std::lock_guard lock(state->mutex);
    return state->values.at(key.hex());
  }
  std::shared_ptr<FakeBackend::State> state;
  std::unique_ptr<RemoteTier> tier;
};

}  // namespace cubby::testing
