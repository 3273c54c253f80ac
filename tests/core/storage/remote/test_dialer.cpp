// The Dialer both remote backends open their connections with (core/src/storage/remote/
// dialer.cpp): a connection within the deadline; a failure counted as a timeout when the deadline
// passed (then nothing is tried), else as an error; each said with the remote's location; the TLS
// context a URL asks for.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "hanging_resolver.hpp"
#include "loopback.hpp"
#include "storage/remote/dialer.hpp"

namespace cubby {
namespace {

using namespace std::chrono_literals;
using testing::HangingResolver;

TEST(Dialer, OpensAConnectionToAServerThatListens) {
  int port = 0;
  const int listener = testing::listen_loopback(port);
  ASSERT_GE(listener, 0);
  AtomicStats counted;
  const Dialer dialer("redis://127.0.0.1", 500ms, nullptr, nullptr, counted);
  auto opened = dialer.open(Endpoint{"127.0.0.1", port, ""}, remote_deadline(500ms));
  ASSERT_TRUE(opened) << opened.error().message;
  EXPECT_EQ(counted.snapshot().remote_errors, 0u);
  EXPECT_EQ(counted.snapshot().remote_timeouts, 0u);
  ::close(listener);
}

TEST(Dialer, ARefusedConnectionIsACountedErrorNamingTheRemote) {
  const int port = testing::free_loopback_port();
  ASSERT_GT(port, 0);
  AtomicStats counted;
  const Dialer dialer("http://127.0.0.1/cache", 500ms, nullptr, nullptr, counted);
  auto opened = dialer.open(Endpoint{"127.0.0.1", port, ""}, remote_deadline(500ms));
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, Errc::io);
  EXPECT_TRUE(opened.error().message.starts_with("http://127.0.0.1/cache: "))
      << opened.error().message;
  EXPECT_EQ(counted.snapshot().remote_errors, 1u);
  EXPECT_EQ(counted.snapshot().remote_timeouts, 0u);
}

TEST(Dialer, APassedDeadlineIsACountedTimeoutAndNothingIsTried) {
  HangingResolver hanging;
  AtomicStats counted;
  const Dialer dialer("redis://cache.example", 250ms, nullptr, hanging.resolver(), counted);
  auto opened = dialer.open(Endpoint{"cache.example", 6379, ""}, RemoteClock::now() - 1ms);
  ASSERT_FALSE(opened);
  EXPECT_EQ(hanging.calls(), 0);
  EXPECT_NE(opened.error().message.find("timed out after 250 ms (CUBBY_REMOTE_TIMEOUT_MS"),
            std::string::npos)
      << opened.error().message;
  EXPECT_EQ(counted.snapshot().remote_timeouts, 1u);
  EXPECT_EQ(counted.snapshot().remote_errors, 0u);
}

TEST(Dialer, ADeadlineThatPassesWhileResolvingIsACountedTimeout) {
  HangingResolver hanging;
  AtomicStats counted;
  const Dialer dialer("redis://cache.example", 100ms, nullptr, hanging.resolver(), counted);
  const auto start = RemoteClock::now();
  auto opened = dialer.open(Endpoint{"cache.example", 6379, ""}, remote_deadline(100ms));
  ASSERT_FALSE(opened);
  EXPECT_LT(RemoteClock::now() - start, 5s);  // the deadline ended it, not the resolver
  EXPECT_EQ(hanging.calls(), 1);
  EXPECT_NE(opened.error().message.find("timed out after 100 ms"), std::string::npos)
      << opened.error().message;
  EXPECT_EQ(counted.snapshot().remote_timeouts, 1u);
}

TEST(RemoteTlsContext, NoneWithoutTlsAContextWithItAndNulloptForAnUnusableFile) {
  auto plain = remote_tls_context(false, TlsSettings{"/nonexistent/ca.pem", "", ""}, "redis://h");
  ASSERT_TRUE(plain);
  EXPECT_EQ(*plain, nullptr);  // the settings are not read when the URL asks for no TLS
  auto system = remote_tls_context(true, TlsSettings{}, "rediss://h");
  ASSERT_TRUE(system);
  EXPECT_NE(*system, nullptr);
  ::testing::internal::CaptureStderr();
  auto unusable =
      remote_tls_context(true, TlsSettings{"/nonexistent/ca.pem", "", ""}, "rediss://h");
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(unusable);
  EXPECT_NE(said.find("CUBBY_REMOTE (rediss://h) is not usable"), std::string::npos) << said;
  EXPECT_NE(said.find("CUBBY_REMOTE_CA_FILE"), std::string::npos) << said;
}

}  // namespace
}  // namespace cubby
