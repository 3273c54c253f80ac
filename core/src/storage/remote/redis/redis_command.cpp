#include "storage/remote/redis/redis_command.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

namespace cubby {
namespace {

// The longest first line of a reply that is read ("+OK", "-ERR ...", "$<length>"): a server
// that sends a longer one is not answering as Redis does.
constexpr std::size_t kMaxReplyLine = 64 << 10;

// The first line of the reply at the start of `reader`'s buffer (without its CRLF), or nullopt
// while the buffer holds no whole first line.
std::optional<std::string_view> first_line(const redisReader& reader) {
  const std::string_view buffered(reader.buf + reader.pos, reader.len - reader.pos);
  const std::size_t end = buffered.find("\r\n");
  if (end == std::string_view::npos) return std::nullopt;
  return buffered.substr(0, end);
}

// Whether `line` (a reply's first line) opens an array. No command the backend sends (GET, SET,
// DEL, AUTH, SELECT, ASKING, CLUSTER NODES) answers with one, so an array is refused before any
// of it is read: its element count and the lengths inside it are never trusted.
bool is_array(std::string_view line) { return !line.empty() && line.front() == '*'; }

// The length a bulk reply's first line ("$N", N >= 0) declares; nullopt for any other line (a
// nil "$-1" included).
std::optional<std::uint64_t> bulk_length(std::string_view line) {
  if (line.empty() || line.front() != '$') return std::nullopt;
  std::int64_t length = -1;
  const auto parsed = std::from_chars(line.data() + 1, line.data() + line.size(), length);
  if (parsed.ec != std::errc() || parsed.ptr != line.data() + line.size() || length < 0) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(length);
}

// Whether `line` (a reply's first line) declares a bulk value longer than `limit`.
bool declares_more_than(std::string_view line, std::uint64_t limit) {
  const auto length = bulk_length(line);
  return length && *length > limit;
}

// Reads more of the reply into `reader`, waiting at most until `deadline`.
bool read_more(Connection& stream, redisReader& reader, RemoteDeadline deadline) {
  char buffer[16 * 1024];
  const std::size_t got = stream.receive(buffer, sizeof buffer, deadline);
  return got > 0 && redisReaderFeed(&reader, buffer, got) == REDIS_OK;
}

// Reads the bulk string whose first line (`line_size` bytes and its CRLF) starts `reader`'s
// buffer: its `length` bytes go straight into `out` (what the reader holds already, then the rest
// from `stream` with no buffer in between: values are hundreds of KB), then its CRLF, all by
// `deadline`. Reads nothing past the CRLF. False when the stream fails (`io`) or the value does
// not end with CRLF (`protocol`).
bool read_bulk(Connection& stream, redisReader& reader, std::size_t line_size, std::uint64_t length,
               RemoteDeadline deadline, std::string& out, CommandEnded& ended) {
  reader.pos += line_size + 2;
  const std::size_t total = static_cast<std::size_t>(length) + 2;  // the value and its CRLF
  out.resize(total);
  const std::size_t held = std::min(reader.len - reader.pos, total);
  std::memcpy(out.data(), reader.buf + reader.pos, held);
  reader.pos += held;
  for (std::size_t got = held; got < total;) {
    const std::size_t n = stream.receive(out.data() + got, total - got, deadline);
    if (n == 0) {
      ended = CommandEnded::io;
      return false;
    }
    got += n;
  }
  if (std::string_view(out).substr(length) != "\r\n") {
    ended = CommandEnded::protocol;
    return false;
  }
  out.resize(static_cast<std::size_t>(length));
  return true;
}

}  // namespace

RedisBackend::Answer redis_command(Connection& stream, redisReader& reader,
                                   std::initializer_list<std::string_view> args,
                                   RemoteDeadline deadline, std::uint64_t limit,
                                   CommandEnded& ended) {
  RedisBackend::Answer answer;
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (std::string_view arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  char* formatted = nullptr;
  const int size = redisFormatCommandArgv(&formatted, static_cast<int>(argv.size()), argv.data(),
                                          lengths.data());
  if (size < 0) {
    ended = CommandEnded::protocol;
    return answer;
  }
  const bool sent =
      stream.send(std::string_view(formatted, static_cast<std::size_t>(size)), deadline);
  redisFreeCommand(formatted);
  ended = CommandEnded::io;
  if (!sent) return answer;
  std::optional<std::string_view> line;
  while (!(line = first_line(reader))) {
    if (reader.len - reader.pos > kMaxReplyLine) {
      ended = CommandEnded::refused;
      return answer;
    }
    if (!read_more(stream, reader, deadline)) return answer;
  }
  if (line->size() > kMaxReplyLine || is_array(*line) || declares_more_than(*line, limit)) {
    ended = CommandEnded::refused;
    return answer;
  }
  if (const auto length = bulk_length(*line)) {
    std::string bulk;
    if (read_bulk(stream, reader, line->size(), *length, deadline, bulk, ended)) {
      answer.bulk = std::move(bulk);
    }
    return answer;
  }
  for (;;) {
    void* reply = nullptr;
    if (redisReaderGetReply(&reader, &reply) != REDIS_OK) {
      ended = CommandEnded::protocol;
      return answer;
    }
    if (reply != nullptr) {
      answer.reply.reset(reply);
      return answer;
    }
    if (!read_more(stream, reader, deadline)) return answer;
  }
}

}  // namespace cubby
