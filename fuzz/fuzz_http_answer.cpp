// libFuzzer target: an HTTP answer is whatever the server (or anyone on the path of a plain http://
// remote) sends. The answer reader must end cleanly on any bytes (no crash, no sanitizer report),
// hand back a 2xx body of at most the limit, and hold no more than a line and one receive in its
// read buffer. The bytes reach it as they do in use: through a connection (a unix socket here),
// written by a thread and closed after the last byte.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "net/connection.hpp"
#include "storage/remote/http/http_answer.hpp"

namespace {

constexpr std::uint64_t kLimit = 4096;
// The read buffer's bound (http_answer.hpp): a line of 16 KiB not consumed yet and one receive.
constexpr std::size_t kBufferBound = (16 << 10) + (64 << 10);

// A unix socket this process listens on, in a folder of its own removed at exit.
struct Listener {
  Listener() {
    char folder[] = "/tmp/cubby-fuzz-http.XXXXXX";
    if (::mkdtemp(folder) == nullptr) std::abort();
    endpoint.unix_path = std::string(folder) + "/s";
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    endpoint.unix_path.copy(address.sun_path, sizeof address.sun_path - 1);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(fd, 4) != 0) {
      std::abort();
    }
  }
  ~Listener() {
    ::close(fd);
    std::error_code ignored;
    std::filesystem::remove_all(std::filesystem::path(endpoint.unix_path).parent_path(), ignored);
  }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int fd = -1;
  cubby::Endpoint endpoint;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Listener listener;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool timed_out = false;
  auto connection = cubby::Connection::open(listener.endpoint, nullptr, deadline, {}, timed_out);
  if (!connection) std::abort();
  const int server = ::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (server < 0) std::abort();
  // Sends the input, then ends the stream; a send the reader no longer waits for fails once the
  // reader's end is closed.
  std::thread sender([server, data, size] {
    for (std::size_t sent = 0; sent < size;) {
      const ssize_t n = ::send(server, data + sent, size - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    ::shutdown(server, SHUT_WR);
  });
  {
    cubby::HttpAnswerReader reader(**connection, deadline);
    if (reader.read("GET", kLimit) && cubby::http_success(reader.status()) &&
        reader.body().size() > kLimit) {
      std::abort();  // a 2xx body over the limit handed back
    }
    if (reader.buffer_peak() > kBufferBound) std::abort();  // memory past the bound
    connection->reset();
  }
  sender.join();
  ::close(server);
  return 0;
}
