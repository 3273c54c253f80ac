// Pool<T>: the idle connections a remote backend keeps for reuse (up to `keep`), and the one its
// connect_ahead is opening on a thread of its own, which a call made meanwhile waits for rather
// than opening another. T is movable (a connection). Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace cubby {

template <class T>
class Pool {
 public:
  explicit Pool(std::size_t keep) : keep_(keep) {}

  enum class Taken {
    idle,          // `taken` holds an idle connection
    none,          // no idle connection: open one
    timed_out,     // the connection opened ahead was still opening at `deadline`
    ahead_failed,  // the connection opened ahead, waited for, failed just now
  };
  // Waits until no connection is being opened ahead (at most until `deadline`), then takes an
  // idle one if there is one.
  Taken take(std::chrono::steady_clock::time_point deadline, std::optional<T>& taken) {
    std::unique_lock lock(mutex_);
    const bool waited = connecting_;
    if (!opened_.wait_until(lock, deadline, [&] { return !connecting_; })) return Taken::timed_out;
    if (waited && ahead_failed_) return Taken::ahead_failed;
    if (idle_.empty()) return Taken::none;
    taken.emplace(std::move(idle_.back()));
    idle_.pop_back();
    return Taken::idle;
  }
  // Keeps `connection` for reuse when fewer than `keep` are idle (else it is dropped).
  void put(T connection) {
    std::lock_guard lock(mutex_);
    if (idle_.size() < keep_) idle_.push_back(std::move(connection));
  }

  // Marks a connection as being opened ahead; false (nothing to do) when one is or was, or one is
  // idle already: at most once per pool.
  bool begin_ahead() {
    std::lock_guard lock(mutex_);
    if (connecting_ || ahead_started_ || !idle_.empty()) return false;
    connecting_ = ahead_started_ = true;
    return true;
  }
  // The connection opened ahead (nullopt: it failed); wakes the calls waiting for it.
  void end_ahead(std::optional<T> connection) {
    std::lock_guard lock(mutex_);
    ahead_failed_ = !connection;
    if (connection && idle_.size() < keep_) idle_.push_back(std::move(*connection));
    connecting_ = false;
    opened_.notify_all();
  }
  // begin_ahead undone: no thread could be started (the first call connects, as without it).
  void cancel_ahead() {
    std::lock_guard lock(mutex_);
    connecting_ = ahead_started_ = false;
    opened_.notify_all();
  }

 private:
  const std::size_t keep_;
  std::mutex mutex_;
  std::condition_variable opened_;
  std::vector<T> idle_;
  bool connecting_ = false;     // a connection is being opened ahead
  bool ahead_started_ = false;  // begin_ahead succeeded once
  bool ahead_failed_ = false;   // and that connection failed
};

}  // namespace cubby
