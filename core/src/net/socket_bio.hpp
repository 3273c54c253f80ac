// socket_bio: the BIO through which OpenSSL reads and writes a remote connection's socket
// (connection.hpp). Its writes never raise SIGPIPE: they are send(2) with MSG_NOSIGNAL, so a
// peer that closed the connection makes SSL_write, and the alert OpenSSL writes inside SSL_read
// or SSL_shutdown, fail with EPIPE instead of killing a host process that keeps SIGPIPE's default
// action (C and C++ programs do; CPython ignores it). The host's own signal disposition and mask
// are never touched. OpenSSL's own socket BIO writes with write(2): it is never used.
//
// Otherwise it behaves as OpenSSL's socket BIO on a non-blocking socket: reads are recv(2);
// EAGAIN and EINTR are "retry" (SSL_ERROR_WANT_READ / WANT_WRITE); the end of the stream is
// flagged for BIO_eof, so OpenSSL 3 reports an end without close_notify as
// SSL_R_UNEXPECTED_EOF_WHILE_READING.
#pragma once

typedef struct bio_st BIO;  // NOLINT(modernize-use-using): OpenSSL's own spelling

namespace cubby {

// A BIO over the connected socket `fd`, which it never closes (its owner does, after SSL_free);
// nullptr when OpenSSL is out of memory. Give it to SSL_set_bio(ssl, bio, bio).
BIO* socket_bio(int fd);

}  // namespace cubby
