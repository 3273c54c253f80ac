// The circuit breaker (core/src/storage/remote/breaker.cpp) over an in-memory backend: an
// Errc::io failure opens it for the back-off (calls skipped untried, counted), any other failure
// leaves it closed, the first call after the back-off is made and a success closes it.
#include <gtest/gtest.h>

#include <thread>

#include "fake_backend.hpp"
#include "storage/remote/breaker.hpp"

namespace cubby {
namespace {

using testing::fake_key;
using testing::FakeBackend;

struct Broken {
  explicit Broken(std::chrono::milliseconds backoff = std::chrono::seconds(60))
      : state(std::make_shared<FakeBackend::State>()),
        backend(state),
        breaker(backend, backoff, "fake://store", counted) {}
  std::shared_ptr<FakeBackend::State> state;
  FakeBackend backend;
  AtomicStats counted;
  Breaker breaker;
};

TEST(Breaker, AnIoFailureSkipsEveryCallForTheBackoffAndWarnsOnce) {
  Broken b;
  b.state->failure = fail(Errc::io, "fake: refused");
  ::testing::internal::CaptureStderr();
  auto failed = b.breaker.get(fake_key(1));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "fake: refused");
  EXPECT_TRUE(b.breaker.is_open());
  b.state->failure.reset();  // the remote is back, but not asked within the back-off
  auto skipped = b.breaker.get(fake_key(1));
  ASSERT_FALSE(skipped);
  EXPECT_EQ(skipped.error().code, Errc::io);
  EXPECT_NE(skipped.error().message.find("fake://store"), std::string::npos);
  EXPECT_FALSE(b.breaker.put(fake_key(1), "x"));
  EXPECT_FALSE(b.breaker.remove(fake_key(1)));
  b.breaker.trip(fail(Errc::io, "again"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("CUBBY_REMOTE_BACKOFF_MS"), std::string::npos) << err;
  EXPECT_EQ(err.find("fake://store"), err.rfind("fake://store")) << err;  // once
  EXPECT_EQ(b.state->gets, 1);
  EXPECT_EQ(b.state->puts, 0);
  EXPECT_EQ(b.state->removes, 0);
  const Stats counted = b.counted.snapshot();
  EXPECT_EQ(counted.remote_skipped, 3u);
  EXPECT_EQ(counted.remote_writes_dropped, 1u);  // the skipped put
}

TEST(Breaker, FailuresOfTheAnswerLeaveItClosed) {
  Broken b;
  for (Errc code : {Errc::corrupt, Errc::invalid_argument}) {
    b.state->failure = fail(code, "fake: answered");
    EXPECT_FALSE(b.breaker.get(fake_key(1)));
    EXPECT_FALSE(b.breaker.is_open());
  }
  b.state->failure.reset();
  EXPECT_TRUE(b.breaker.get(fake_key(1)));
  EXPECT_EQ(b.state->gets, 3);
  EXPECT_EQ(b.counted.snapshot().remote_skipped, 0u);
}

TEST(Breaker, TheFirstCallAfterTheBackoffIsMadeAndASuccessClosesIt) {
  Broken b(std::chrono::milliseconds(20));
  b.state->failure = fail(Errc::io, "fake: timed out");
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(b.breaker.put(fake_key(1), "x"));
  (void)::testing::internal::GetCapturedStderr();
  b.state->failure.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  EXPECT_FALSE(b.breaker.is_open());
  ASSERT_TRUE(b.breaker.put(fake_key(1), "x"));
  auto got = b.breaker.get(fake_key(1));
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ(**got, "x");
  EXPECT_EQ(b.state->puts, 2);
  EXPECT_EQ(b.counted.snapshot().remote_skipped, 0u);
}

}  // namespace
}  // namespace cubby
