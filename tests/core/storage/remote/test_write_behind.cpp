// The write-behind queue (core/src/storage/remote/write_behind.cpp) over an in-memory backend:
// queued writes land in order, the queue is bounded in entries and bytes, a bounded drain drops
// (and counts) what is left and caps the deadline of the writes it lets start.
#include <gtest/gtest.h>

#include <thread>

#include "fake_backend.hpp"
#include "storage/remote/write_behind.hpp"

namespace cubby {
namespace {

using testing::count_of;
using testing::fake_key;
using testing::FakeBackend;

struct Behind {
  explicit Behind(std::size_t entries = 256, std::uint64_t bytes = 1 << 20)
      : state(std::make_shared<FakeBackend::State>()),
        backend(state),
        writer(std::make_unique<WriteBehind>(backend, entries, bytes, counted)) {}
  void wait_for_first_put() const {
    while (count_of(*state, &FakeBackend::State::puts) == 0) std::this_thread::yield();
  }
  std::shared_ptr<FakeBackend::State> state;
  FakeBackend backend;
  AtomicStats counted;
  std::unique_ptr<WriteBehind> writer;
};

TEST(WriteBehind, QueuedWritesLandInOrderAndDrainWaitsForThem) {
  Behind b;
  for (std::uint8_t i = 0; i < 10; ++i) b.writer->put_later(fake_key(i), "bytes");
  b.writer->drain(std::chrono::seconds(30));
  ASSERT_EQ(b.state->order.size(), 10u);
  for (std::uint8_t i = 0; i < 10; ++i) EXPECT_EQ(b.state->order[i], fake_key(i).hex());
  EXPECT_EQ(b.state->values.size(), 10u);
  EXPECT_EQ(b.counted.snapshot().remote_writes_dropped, 0u);
}

TEST(WriteBehind, TheQueueIsBoundedInEntriesAndBytes) {
  Behind b(2, 10);
  b.state->put_takes = std::chrono::milliseconds(300);
  b.writer->put_later(fake_key(0), "four");  // taken by the writer, still counted in bytes
  b.wait_for_first_put();
  b.writer->put_later(fake_key(1), "12345");  // 9 bytes queued
  b.writer->put_later(fake_key(2), "12");     // 11: over the byte bound, dropped
  b.writer->put_later(fake_key(3), "1");      // 10 bytes, 2 entries waiting
  b.writer->put_later(fake_key(4), "");       // a third waiting entry: dropped
  EXPECT_EQ(b.counted.snapshot().remote_writes_dropped, 2u);
  b.writer->drain(std::chrono::seconds(30));
  EXPECT_EQ(b.state->values.size(), 3u);
  EXPECT_EQ(b.state->values.count(fake_key(2).hex()), 0u);
  EXPECT_EQ(b.state->values.count(fake_key(4).hex()), 0u);
  b.writer->put_later(fake_key(5), "1234567890");  // the bytes left with the writes
  b.writer->drain(std::chrono::seconds(30));
  EXPECT_EQ(b.state->values.count(fake_key(5).hex()), 1u);
}

TEST(WriteBehind, ABoundedDrainCapsTheWritesItLetsStartAndDropsTheRest) {
  Behind b;
  b.state->put_takes = std::chrono::seconds(60);      // every write lasts until its deadline:
  b.state->timeout = std::chrono::milliseconds(150);  // its own, or the drain's cap
  for (std::uint8_t i = 0; i < 5; ++i) b.writer->put_later(fake_key(i), "bytes");
  b.wait_for_first_put();
  const auto start = RemoteClock::now();
  b.writer->drain(std::chrono::milliseconds(200));
  EXPECT_GE(RemoteClock::now() - start, std::chrono::milliseconds(200));
  const std::uint64_t dropped = b.counted.snapshot().remote_writes_dropped;
  b.writer.reset();  // waits for the write in flight
  EXPECT_EQ(dropped + b.state->puts, 5u);
  EXPECT_GE(dropped, 1u);
  // The first write started before the drain (its own deadline); those started during the drain
  // end by its bound (plus scheduling slack for one started in the instant it passed).
  ASSERT_GE(b.state->deadlines.size(), 2u);
  for (std::size_t i = 1; i < b.state->deadlines.size(); ++i) {
    EXPECT_LE(b.state->deadlines[i], start + std::chrono::milliseconds(200 + 150));
  }
}

}  // namespace
}  // namespace cubby
