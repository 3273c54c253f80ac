// Tests of util/process: usable cores and bounded reaping of a child.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "util/process.hpp"

namespace cubby {
namespace {

using namespace std::chrono_literals;

TEST(UsableCores, IsAtLeastOne) { EXPECT_GE(usable_cores(), 1u); }

TEST(ReapedWithin, ReapsAChildThatExitsAndWaitsNoLongerThanTheBound) {
  const pid_t quick = ::fork();
  if (quick == 0) ::_exit(0);
  EXPECT_TRUE(reaped_within(quick, 10s));
  const pid_t slow = ::fork();
  if (slow == 0) {
    ::pause();
    ::_exit(0);
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(reaped_within(slow, 50ms));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ::kill(slow, SIGKILL);
  EXPECT_TRUE(reaped_within(slow, 10s));
}

}  // namespace
}  // namespace cubby
