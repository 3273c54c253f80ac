// Pool (core/src/net/pool.hpp): idle connections kept up to a bound, and the one opened
// ahead, which a call made meanwhile waits for (by its deadline) instead of opening another.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "net/pool.hpp"

namespace cubby {
namespace {

using Clock = std::chrono::steady_clock;
using Taken = Pool<int>::Taken;

Clock::time_point in(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

TEST(Pool, KeepsIdleConnectionsUpToItsBound) {
  Pool<int> pool(2);
  std::optional<int> taken;
  EXPECT_EQ(pool.take(in(100), taken), Taken::none);
  pool.put(1);
  pool.put(2);
  pool.put(3);  // over the bound: dropped
  EXPECT_EQ(pool.take(in(100), taken), Taken::idle);
  EXPECT_EQ(taken, 2);
  taken.reset();
  EXPECT_EQ(pool.take(in(100), taken), Taken::idle);
  EXPECT_EQ(taken, 1);
  EXPECT_EQ(pool.take(in(100), taken), Taken::none);
}

TEST(Pool, ACallWaitsForTheConnectionOpenedAheadAndThenUsesIt) {
  Pool<int> pool(4);
  ASSERT_TRUE(pool.begin_ahead());
  EXPECT_FALSE(pool.begin_ahead());  // once
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pool.end_ahead(7);
  });
  std::optional<int> taken;
  EXPECT_EQ(pool.take(in(5000), taken), Taken::idle);
  EXPECT_EQ(taken, 7);
  opener.join();
  EXPECT_FALSE(pool.begin_ahead());  // at most once per pool, even after it ended
}

TEST(Pool, AFailedConnectionAheadSkipsTheCallsThatWaitedAndAStuckOneTimesThemOut) {
  Pool<int> pool(4);
  ASSERT_TRUE(pool.begin_ahead());
  std::optional<int> taken;
  const auto start = Clock::now();
  EXPECT_EQ(pool.take(in(50), taken), Taken::timed_out);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(50));
  pool.end_ahead(std::nullopt);
  EXPECT_EQ(pool.take(in(50), taken), Taken::none);  // it did not wait: it opens its own
  Pool<int> other(4);
  ASSERT_TRUE(other.begin_ahead());
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    other.end_ahead(std::nullopt);
  });
  EXPECT_EQ(other.take(in(5000), taken), Taken::ahead_failed);
  opener.join();
  Pool<int> cancelled(4);
  ASSERT_TRUE(cancelled.begin_ahead());
  cancelled.cancel_ahead();
  EXPECT_EQ(cancelled.take(in(50), taken), Taken::none);
}

}  // namespace
}  // namespace cubby
