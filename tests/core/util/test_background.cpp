// Background jobs (core/src/util/background.cpp): run in order off the caller's thread, a bounded
// queue, drains with and without a bound.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "util/background.hpp"

namespace cubby {
namespace {

TEST(Background, JobsRunInOrderOffTheCallersThreadAndDrainWaitsForThem) {
  Background background;
  std::mutex mutex;
  std::vector<int> ran;
  std::thread::id worker;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(background.post([&, i] {
      std::lock_guard lock(mutex);
      ran.push_back(i);
      worker = std::this_thread::get_id();
    }));
  }
  background.drain();
  ASSERT_EQ(ran.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(ran[i], i);
  EXPECT_NE(worker, std::this_thread::get_id());
}

TEST(Background, TheQueueIsBoundedAndABoundedDrainDropsWhatDidNotStart) {
  Background background;
  std::atomic<bool> release{false};
  std::atomic<bool> started{false};
  std::atomic<int> ran{0};
  ASSERT_TRUE(background.post([&] {
    started = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ++ran;
  }));
  while (!started) std::this_thread::yield();
  EXPECT_TRUE(background.post([&] { ++ran; }, 2));
  EXPECT_TRUE(background.post([&] { ++ran; }, 2));
  EXPECT_FALSE(background.post([&] { ++ran; }, 2));  // 2 already waiting
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(background.drain_for(std::chrono::milliseconds(50)), 2u);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
  release = true;
  background.drain();
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(background.drain_for(std::chrono::milliseconds(50)), 0u);  // idle: at once
  EXPECT_TRUE(background.post([&] { ++ran; }, 2));
  background.drain();
  EXPECT_EQ(ran, 2);
}

}  // namespace
}  // namespace cubby
