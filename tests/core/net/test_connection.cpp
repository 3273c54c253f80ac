// Connections to servers (core/src/net/connection.cpp): bytes both ways over a unix socket, a
// refused connection named. TLS: test_tls_context.cpp and test_socket_bio.cpp.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "net/connection.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using Clock = std::chrono::steady_clock;

TEST(Connection, UnixSocketCarriesBytesBothWays) {
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
  auto opened = Connection::open(Endpoint{"", 0, path}, nullptr, deadline, nullptr, timed_out);
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

TEST(Connection, NothingListeningFailsAtOnceNamingTheEndpoint) {
  bool timed_out = false;
  auto opened = Connection::open(Endpoint{"127.0.0.1", 1, ""}, nullptr,
                                 Clock::now() + std::chrono::seconds(5), nullptr, timed_out);
  ASSERT_FALSE(opened);
  EXPECT_FALSE(timed_out);
  EXPECT_NE(opened.error().message.find("127.0.0.1:1"), std::string::npos)
      << opened.error().message;
}

}  // namespace
}  // namespace cubby
