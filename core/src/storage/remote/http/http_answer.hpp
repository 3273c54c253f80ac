// HttpAnswerReader: one HTTP/1.1 answer read off a connection (net/connection.hpp) by a
// deadline, for the HTTP remote (http.hpp): its status line and head (1xx answers skipped), then
// its body, framed by Content-Length, chunked encoding or the end of the stream, up to a bound: a
// 2xx body over the caller's limit is refused before it is read (or as soon as it passes it); an
// error page's body (any other status) is read and dropped up to 64 KiB (past that it is left
// unread and the connection not reused). Whether the connection can carry another request:
// HTTP/1.1 without `Connection: close`, the answer read to its end.
//
// Memory is bounded whatever the server sends and however long the deadline: the lines of the
// head — the status line and headers of every 1xx answer and of the final answer, and a chunked
// body's trailer — are 100 in all per answer, of at most 16 KiB each (past either bound: not_http);
// the read buffer keeps only bytes not consumed yet (at most a line and one receive of 64 KiB).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "net/connection.hpp"

namespace cubby {

inline bool http_success(long status) { return status >= 200 && status < 300; }

class HttpAnswerReader {
 public:
  enum class Ended {
    answered,  // status() and body() hold it
    too_big,   // a 2xx body over the limit: refused, not (all) read
    stream,    // the connection failed or closed first (received(): whether any byte came)
    not_http,  // the bytes are not an HTTP/1.x answer: what() says why
  };

  HttpAnswerReader(Connection& connection, std::chrono::steady_clock::time_point deadline)
      : connection_(connection), deadline_(deadline) {}

  // Reads the answer to `method` whose 2xx body may be up to `limit` bytes; false when it ended
  // otherwise than answered.
  bool read(std::string_view method, std::uint64_t limit);

  Ended ended() const { return ended_; }
  long status() const { return status_; }
  std::string& body() { return body_; }
  bool received() const { return received_; }
  const std::string& what() const { return what_; }
  // Whether the connection can carry another request.
  bool reusable() const { return reusable_; }
  // The most bytes the read buffer held at once (its memory bound, for tests).
  std::size_t buffer_peak() const { return buffer_peak_; }

 private:
  // Receives more bytes into the buffer; false when the stream failed or ended.
  bool more();
  bool not_http(std::string why);
  // A body over its bound, left unread (its connection is not reused): a 2xx one is refused
  // (when `kept`); an error page's answer stands. False: reading stops.
  bool refuse(bool kept);
  // The next line, without its CRLF; nullopt when the stream ended or the line is too long.
  std::optional<std::string> line();
  // line(), one of the head's (or the trailer's) 100: nullopt past them too.
  std::optional<std::string> head_line();
  // `count` bytes, appended to `out` unless it is null (read and dropped). What the buffer does
  // not hold yet is received straight into `out` (a value is not copied through the buffer).
  bool bytes(std::uint64_t count, std::string* out);
  // A chunked body of at most `bound` bytes, and its trailer.
  bool chunks(std::uint64_t bound, std::string* out);
  // A body that ends with the stream, of at most `bound` bytes.
  bool to_the_end(std::uint64_t bound, std::string* out);

  Connection& connection_;
  std::chrono::steady_clock::time_point deadline_;
  std::string buffer_;  // received; consumed up to at_
  std::size_t at_ = 0;
  std::size_t buffer_peak_ = 0;
  int head_lines_ = 0;  // lines head_line() gave
  bool received_ = false;
  bool reusable_ = false;
  bool too_big_ = false;
  Ended ended_ = Ended::answered;
  std::string what_;
  long status_ = 0;
  std::string body_;
};

}  // namespace cubby
