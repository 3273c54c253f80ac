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

TEST(WriteBehind, ABoundedDrainDropsWhatIsStillQueuedAtItsBound) {
  Behind b;
  b.state->put_takes = std::chrono::seconds(60);      // every write lasts until its deadline,
  b.state->timeout = std::chrono::milliseconds(500);  // the first one past the drain's bound
  for (std::uint8_t i = 0; i < 5; ++i) b.writer->put_later(fake_key(i), "bytes");
  b.wait_for_first_put();
  const auto start = RemoteClock::now();
  b.writer->drain(std::chrono::milliseconds(100));
  const auto took = RemoteClock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(100));
  EXPECT_LT(took, std::chrono::milliseconds(450));  // not waiting for the write in flight
  EXPECT_EQ(b.counted.snapshot().remote_writes_dropped, 4u);
  b.writer.reset();  // waits for the write in flight (its own deadline)
  EXPECT_EQ(b.state->puts, 1);
}

TEST(WriteBehind, AWriteStartedDuringABoundedDrainEndsByItsBound) {
  Behind b;
  b.state->put_takes = std::chrono::seconds(60);      // every write lasts until its deadline
  b.state->timeout = std::chrono::milliseconds(300);  // the first: its own
  b.writer->put_later(fake_key(0), "bytes");
  b.writer->put_later(fake_key(1), "bytes");
  b.wait_for_first_put();
  {
    std::lock_guard lock(b.state->mutex);
    b.state->timeout = std::chrono::seconds(60);  // the second: the drain's cap, not its own
  }
  const auto start = RemoteClock::now();
  b.writer->drain(std::chrono::milliseconds(600));
  const auto returned = RemoteClock::now();
  EXPECT_LT(returned - start, std::chrono::seconds(5));
  ASSERT_EQ(b.state->deadlines.size(), 2u);
  // The drain's bound (taken a moment after `start`), not 60 s: by the time the drain returns.
  EXPECT_LE(b.state->deadlines[1], returned);
  EXPECT_EQ(b.counted.snapshot().remote_writes_dropped, 0u);
  b.writer.reset();  // the second write ends at its capped deadline, as the drain returns
  EXPECT_EQ(b.state->values.size(), 2u);
}

}  // namespace
}  // namespace cubby
