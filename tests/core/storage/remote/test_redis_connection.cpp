// Connections to Redis servers (core/src/storage/remote/redis_connection.cpp): name resolution
// bounded by the deadline however long the resolver takes, unix sockets, refused connections.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "hanging_resolver.hpp"
#include "storage/remote/redis_connection.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using Clock = std::chrono::steady_clock;
using testing::HangingResolver;

TEST(ResolveBounded, AResolverThatHangsIsLeftBehindAtTheDeadline) {
  HangingResolver hanging;
  bool timed_out = false;
  const auto start = Clock::now();
  auto resolved =
      resolve_bounded("cache.example.invalid", 6379, start + std::chrono::milliseconds(100),
                      hanging.resolver(), timed_out);
  const auto took = Clock::now() - start;
  ASSERT_FALSE(resolved);
  EXPECT_TRUE(timed_out);
  EXPECT_EQ(resolved.error().code, Errc::io);
  EXPECT_GE(took, std::chrono::milliseconds(100));
  EXPECT_LT(took, std::chrono::seconds(5));  // the deadline, not the resolver, ended it
  EXPECT_EQ(hanging.calls(), 1);
}

TEST(ResolveBounded, NumericAddressesNeedNoResolver) {
  HangingResolver hanging;
  bool timed_out = false;
  for (const char* host : {"127.0.0.1", "::1"}) {
    auto resolved = resolve_bounded(host, 6379, Clock::now() + std::chrono::seconds(5),
                                    hanging.resolver(), timed_out);
    ASSERT_TRUE(resolved) << resolved.error().message;
    EXPECT_EQ(resolved->size(), 1u);
  }
  EXPECT_EQ(hanging.calls(), 0);
}

TEST(ResolveBounded, TheSystemResolverAnswersForLocalhost) {
  bool timed_out = false;
  auto resolved = resolve_bounded("localhost", 6379, Clock::now() + std::chrono::seconds(10),
                                  nullptr, timed_out);
  ASSERT_TRUE(resolved) << resolved.error().message;
  EXPECT_FALSE(resolved->empty());
}

TEST(RedisConnection, UnixSocketCarriesBytesBothWays) {
  testing::TempDir dir("sock");
  const std::string path = (dir.path() / "s").string();
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  bool timed_out = false;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  auto opened =
      RedisConnection::open(RedisEndpoint{"", 0, path}, nullptr, deadline, nullptr, timed_out);
  ASSERT_TRUE(opened) << opened.error().message;
  const int server = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(server, 0);
  ASSERT_TRUE((*opened)->send("PING\r\n", deadline));
  char buffer[16] = {};
  ASSERT_EQ(::recv(server, buffer, sizeof buffer, 0), 6);
  ASSERT_EQ(::send(server, "+PONG\r\n", 7, 0), 7);
  EXPECT_EQ((*opened)->receive(buffer, sizeof buffer, deadline), 7u);
  EXPECT_EQ(std::string(buffer, 7), "+PONG\r\n");
  ::close(server);  // the peer closing is a failure, not a hang
  EXPECT_EQ((*opened)->receive(buffer, sizeof buffer, deadline), 0u);
  EXPECT_FALSE((*opened)->timed_out());
  ::close(listener);
}

TEST(RedisConnection, NothingListeningFailsAtOnceNamingTheEndpoint) {
  bool timed_out = false;
  auto opened = RedisConnection::open(RedisEndpoint{"127.0.0.1", 1, ""}, nullptr,
                                      Clock::now() + std::chrono::seconds(5), nullptr, timed_out);
  ASSERT_FALSE(opened);
  EXPECT_FALSE(timed_out);
  EXPECT_NE(opened.error().message.find("127.0.0.1:1"), std::string::npos)
      << opened.error().message;
}

}  // namespace
}  // namespace cubby
