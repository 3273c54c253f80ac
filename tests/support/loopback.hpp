// Sockets on 127.0.0.1 for the test servers (fake and real): a listening socket on a free port,
// and a port that is free now.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace cubby::testing {

// A TCP socket listening on 127.0.0.1 on a port the kernel picks (SOCK_CLOEXEC | `flags`, e.g.
// SOCK_NONBLOCK), that port in `port`; -1 (and `port` 0) when none can be opened.
inline int listen_loopback(int& port, int flags = 0) {
  port = 0;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, 16) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  port = ntohs(addr.sin_port);
  return fd;
}

// A port free on 127.0.0.1 just now, for a server started next (which may find it taken
// meanwhile, and then retries); 0 if none.
inline int free_loopback_port() {
  int port = 0;
  const int fd = listen_loopback(port);
  if (fd >= 0) ::close(fd);
  return port;
}

}  // namespace cubby::testing
