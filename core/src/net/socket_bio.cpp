#include "net/socket_bio.hpp"

#include <openssl/bio.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>

namespace cubby {
namespace {

int fd_of(BIO* bio) { return static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(bio))); }

bool retryable(int error) { return error == EAGAIN || error == EWOULDBLOCK || error == EINTR; }

int write_socket(BIO* bio, const char* data, int size) {
  BIO_clear_retry_flags(bio);
  // MSG_NOSIGNAL: a closed peer is EPIPE, never SIGPIPE (the point of this BIO).
  const ssize_t n = ::send(fd_of(bio), data, static_cast<std::size_t>(size), MSG_NOSIGNAL);
  if (n < 0 && retryable(errno)) BIO_set_retry_write(bio);
  return static_cast<int>(n);
}

int read_socket(BIO* bio, char* data, int size) {
  if (data == nullptr) return 0;
  BIO_clear_retry_flags(bio);
  const ssize_t n = ::recv(fd_of(bio), data, static_cast<std::size_t>(size), 0);
  if (n == 0) {
    BIO_set_flags(bio, BIO_FLAGS_IN_EOF);
  } else if (n < 0 && retryable(errno)) {
    BIO_set_retry_read(bio);
  }
  return static_cast<int>(n);
}

int puts_socket(BIO* bio, const char* text) {
  int size = 0;
  while (text[size] != '\0') ++size;
  return write_socket(bio, text, size);
}

long control(BIO* bio, int command, long /*number*/, void* pointer) {
  switch (command) {
    case BIO_CTRL_FLUSH:  // nothing is buffered
      return 1;
    case BIO_CTRL_EOF:
      return BIO_test_flags(bio, BIO_FLAGS_IN_EOF) != 0 ? 1 : 0;
    case BIO_C_GET_FD:
      if (pointer != nullptr) *static_cast<int*>(pointer) = fd_of(bio);
      return fd_of(bio);
    default:  // no kTLS, no close-on-free, nothing pending
      return 0;
  }
}

int create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

// The method, made once per process (OpenSSL keeps no reference to free it by).
const BIO_METHOD* method() {
  static BIO_METHOD* const made = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                 "cubby socket (MSG_NOSIGNAL)");
    if (m != nullptr &&
        (BIO_meth_set_write(m, write_socket) != 1 || BIO_meth_set_read(m, read_socket) != 1 ||
         BIO_meth_set_puts(m, puts_socket) != 1 || BIO_meth_set_ctrl(m, control) != 1 ||
         BIO_meth_set_create(m, create) != 1)) {
      BIO_meth_free(m);
      m = nullptr;
    }
    return m;
  }();
  return made;
}

}  // namespace

BIO* socket_bio(int fd) {
  const BIO_METHOD* m = method();
  if (m == nullptr) return nullptr;
  BIO* bio = BIO_new(m);
  if (bio != nullptr) BIO_set_data(bio, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)));
  return bio;
}

}  // namespace cubby
