// ReadAheadRemote: a fresh runner's remote that reads ahead. A fresh runner's lookups all go to
// the remote, one round trip each, one after the other. Wrapped around the orchestrator's remote,
// this one fetches, on threads of its own (two fetches in flight), the entries a plan names (the
// suite's keys: what the fleet's last run of the suite asked for, format/recipe.hpp), in that
// order, while the run derives its keys; a lookup then takes its value from here instead of waiting
// for the network. The orchestrator wraps its remote in one for a store folder without entries when
// the suite is known (Config::suite) and CUBBY_REMOTE_READ_AHEAD is not 0.
//
// A lookup (get) of a key the plan named takes the value fetched for it, or waits for it while it
// is being fetched (within the remote's timeout, then it asks the remote itself); a key the
// read-ahead has not reached yet is taken off its list and fetched by the lookup itself, as
// without read-ahead; any other key goes to the remote. A lookup made before the plan is known
// waits for it, within the timeout. Each value is handed over once, then forgotten; values are
// not verified here (the orchestrator verifies what it takes, as any remote value), and a value
// never taken is dropped at stop(), never written anywhere. Reading ahead ends at the plan's end,
// with `max_bytes` of values waiting to be taken, at the first failed fetch (the breaker then
// skips the remote anyway) or at stop(). Every other call goes to the wrapped remote.
//
// It counts remote_read_ahead (values fetched ahead) and remote_read_ahead_taken (of them, those a
// lookup took) on top of the wrapped remote's counters.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "storage/remote/remote.hpp"

namespace cubby {

// What to read ahead: the keys, in order, and what to do at stop() (bookkeeping that need not
// delay the first fetch; releasing what the plan held, a lock).
struct ReadAheadPlan {
  std::vector<Key> keys;
  std::function<void()> after;
};

class ReadAheadRemote final : public Remote {
 public:
  // Wraps `inner` and starts reading ahead: `plan` is called on the read-ahead thread with
  // `inner` (it may fetch its list there). `timeout`: how long a lookup waits for the plan or for
  // a value being fetched (the remote's timeout).
  ReadAheadRemote(std::unique_ptr<Remote> inner, std::function<ReadAheadPlan(Remote&)> plan,
                  std::chrono::milliseconds timeout, std::uint64_t max_bytes = 256ull << 20);
  ~ReadAheadRemote() override;  // stop()
  ReadAheadRemote(const ReadAheadRemote&) = delete;
  ReadAheadRemote& operator=(const ReadAheadRemote&) = delete;

  Result<std::optional<std::string>> get(const Key& key) override;
  // get(key), and when the value taken from the read-ahead fails `check`, the remote's
  // get_checked (its layers may hold a valid one).
  Result<std::optional<std::string>> get_checked(const Key& key, const ValueCheck& check) override;
  Result<void> put(const Key& key, std::string_view bytes) override {
    return inner_->put(key, bytes);
  }
  Result<void> remove(const Key& key) override { return inner_->remove(key); }
  void put_later(const Key& key, std::string bytes) override {
    inner_->put_later(key, std::move(bytes));
  }
  void drain(std::chrono::milliseconds bound) override { inner_->drain(bound); }
  void drain() override { inner_->drain(); }
  void connect_ahead() override { inner_->connect_ahead(); }
  bool writable() const override { return inner_->writable(); }
  Stats counters() const override;
  const std::string& location() const override { return inner_->location(); }

  // Stops reading ahead (a fetch in flight ends within the remote's timeout; the plan's `after`
  // runs) and drops the values no lookup took. Lookups go to the remote from then on.
  void stop();

 private:
  enum class State { waiting, fetching, ready };
  struct Slot {
    State state = State::waiting;
    Result<std::optional<std::string>> value = std::optional<std::string>();
  };

  // The value read ahead for `key`, taken off the list (waiting for the plan or the fetch in
  // flight, within the timeout); nullopt when the lookup is to ask the remote itself.
  std::optional<Result<std::optional<std::string>>> take(const Key& key);
  // A fetching thread; the first one (given the plan) makes the plan first. On an exception
  // (out of memory) reading ahead ends and the lookups go to the remote.
  void run(const std::function<ReadAheadPlan(Remote&)>* plan);
  // Fetches the plan's next keys until the end, a failure, the byte bound or stop().
  void fetch();

  // Fetches in flight at a time: one's round trip overlaps another's transfer and decoding.
  static constexpr std::size_t kFetchers = 2;

  std::unique_ptr<Remote> inner_;
  std::chrono::milliseconds timeout_;
  std::uint64_t max_bytes_;
  AtomicStats counted_;

  std::mutex mutex_;
  std::condition_variable changed_;
  bool planned_ = false;         // the plan is known (or there is none)
  bool stopping_ = false;        // stop() was called
  bool ended_ = false;           // a fetch failed: no more
  std::vector<Key> order_;       // the plan's keys, in order, without repeats
  std::size_t next_ = 0;         // order_'s first key not yet fetched nor passed over
  std::map<Key, Slot> slots_;    // the plan's keys not yet taken
  std::uint64_t held_ = 0;       // bytes of ready values
  std::function<void()> after_;  // the plan's, run by stop()
  std::vector<std::thread> threads_;
};

}  // namespace cubby
