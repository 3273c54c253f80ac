// The HTTP/1.1 answer reader (core/src/storage/remote/http/http_answer.cpp) on a loopback
// connection to a fake server: what it reads, and that the memory it takes is bounded whatever the
// server sends (a flood of 1xx answers, an endless trailer, long lines) and however long the
// deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "http_fake.hpp"
#include "net/connection.hpp"
#include "storage/remote/http/http_answer.hpp"

namespace cubby {
namespace {

using testing::HttpFake;
using Clock = std::chrono::steady_clock;

// What the buffer may hold: a line of up to 16 KiB not consumed yet, and one receive of 64 KiB.
constexpr std::size_t kBufferBound = (16 << 10) + (64 << 10);

// A GET sent to a fake server that answers it with `answer`, and the reader of its answer, with
// a deadline `timeout` from now.
class Exchange {
 public:
  Exchange(const HttpFake::Answer& answer, std::chrono::milliseconds timeout)
      : server_({{"GET", answer}}, std::chrono::milliseconds(50)),
        deadline_(Clock::now() + timeout) {
    const std::string url = server_.url();
    Endpoint endpoint;
    endpoint.host = "127.0.0.1";
    endpoint.port = std::stoi(url.substr(url.rfind(':') + 1));
    bool timed_out = false;
    auto opened = Connection::open(endpoint, nullptr, deadline_, {}, timed_out);
    if (!opened) throw std::runtime_error(opened.error().message);
    connection_ = std::move(opened).value();
    if (!connection_->send("GET /key HTTP/1.1\r\nHost: fake\r\n\r\n", deadline_)) {
      throw std::runtime_error(connection_->error());
    }
    reader_ = std::make_unique<HttpAnswerReader>(*connection_, deadline_);
  }

  // Reads the answer with `limit`; how long it took.
  std::chrono::milliseconds read(std::uint64_t limit) {
    const auto start = Clock::now();
    read_ = reader_->read("GET", limit);
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  }

  bool answered() const { return read_; }
  HttpAnswerReader& reader() { return *reader_; }

 private:
  HttpFake server_;
  Clock::time_point deadline_;
  std::unique_ptr<Connection> connection_;
  std::unique_ptr<HttpAnswerReader> reader_;
  bool read_ = false;
};

std::string repeated(const std::string& text, int times) {
  std::string out;
  out.reserve(text.size() * static_cast<std::size_t>(times));
  for (int i = 0; i < times; ++i) out += text;
  return out;
}

TEST(HttpAnswerReader, ReadsAChunkedBodyAfterInterimAnswersAndItsTrailer) {
  Exchange exchange({"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX-A: a\r\n\r\n"
                     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: t\r\n\r\n",
                     ""},
                    std::chrono::seconds(5));
  exchange.read(1 << 20);
  ASSERT_TRUE(exchange.answered()) << exchange.reader().what();
  EXPECT_EQ(exchange.reader().status(), 200);
  EXPECT_EQ(exchange.reader().body(), "hello world");
  EXPECT_TRUE(exchange.reader().reusable());
}

// A head of 100 lines in all is read; the 101st line (1xx answers and trailer included) is not.
TEST(HttpAnswerReader, TheHeadsHundredLinesCountInterimAnswersAndTheTrailerTogether) {
  const std::string interim = repeated("HTTP/1.1 100 Continue\r\nX-I: i\r\n\r\n", 10);  // 30
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n" +
                           repeated("X-H: h\r\n", 38) + "\r\n";  // 41
  const std::string body = "5\r\nhello\r\n0\r\n";
  // 30 + 41 + 29 trailer lines = 100 lines: read.
  Exchange within({interim + head + body + repeated("X-T: t\r\n", 28) + "\r\n", ""},
                  std::chrono::seconds(5));
  within.read(1 << 20);
  ASSERT_TRUE(within.answered()) << within.reader().what();
  EXPECT_EQ(within.reader().body(), "hello");
  // One more trailer line: not an answer a cache server gives.
  Exchange over({interim + head + body + repeated("X-T: t\r\n", 29) + "\r\n", ""},
                std::chrono::seconds(5));
  over.read(1 << 20);
  EXPECT_FALSE(over.answered());
  EXPECT_EQ(over.reader().ended(), HttpAnswerReader::Ended::not_http);
  EXPECT_NE(over.reader().what().find("over 100 lines"), std::string::npos) << over.reader().what();
}

// 100 000 `100 Continue` answers (2.6 MB) sent at once, under a 5 s deadline: refused at the
// head's bound, long before the deadline, in a buffer of one receive.
TEST(HttpAnswerReader, AFloodOfInterimAnswersEndsAtTheHeadBoundInBoundedMemory) {
  Exchange exchange({repeated("HTTP/1.1 100 Continue\r\n\r\n", 100000), ""},
                    std::chrono::seconds(5));
  const auto took = exchange.read(1 << 20);
  EXPECT_FALSE(exchange.answered());
  EXPECT_EQ(exchange.reader().ended(), HttpAnswerReader::Ended::not_http);
  EXPECT_NE(exchange.reader().what().find("over 100 lines"), std::string::npos)
      << exchange.reader().what();
  EXPECT_LT(took, std::chrono::milliseconds(2500));
  EXPECT_LE(exchange.reader().buffer_peak(), kBufferBound);
}

// A chunked body whose trailer never ends (100 000 lines, 1.4 MB): the same.
TEST(HttpAnswerReader, AnEndlessTrailerEndsAtTheHeadBoundInBoundedMemory) {
  Exchange exchange({"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n" +
                         repeated("X-Trailer: t\r\n", 100000),
                     ""},
                    std::chrono::seconds(5));
  const auto took = exchange.read(1 << 20);
  EXPECT_FALSE(exchange.answered());
  EXPECT_EQ(exchange.reader().ended(), HttpAnswerReader::Ended::not_http);
  EXPECT_LT(took, std::chrono::milliseconds(2500));
  EXPECT_LE(exchange.reader().buffer_peak(), kBufferBound);
}

// Lines with no bound on their count — a chunked body's size lines, here each with a 16 000-byte
// extension before a 1-byte chunk (4 MB in all) — pass through a buffer that keeps no consumed
// bytes: it never holds more than a line and one receive.
TEST(HttpAnswerReader, TheReadBufferKeepsNoConsumedBytes) {
  const std::string chunk = "1;" + std::string(16000, 'e') + "\r\nx\r\n";
  Exchange exchange(
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + repeated(chunk, 256) + "0\r\n\r\n",
       ""},
      std::chrono::seconds(10));
  exchange.read(1 << 20);
  ASSERT_TRUE(exchange.answered()) << exchange.reader().what();
  EXPECT_EQ(exchange.reader().body(), std::string(256, 'x'));
  EXPECT_LE(exchange.reader().buffer_peak(), kBufferBound);
}

}  // namespace
}  // namespace cubby
