#include "storage/remote/http/http_answer.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <system_error>

namespace cubby {
namespace {

// The longest line of an answer's head, and the most lines of its head, 1xx answers and trailer
// together: past them the answer is not one a cache server gives.
constexpr std::size_t kMaxLine = 16 << 10;
constexpr int kMaxHeadLines = 100;
// The longest body of a non-2xx answer (an error page) read to keep its connection: a longer one
// is left unread and the connection closed.
constexpr std::uint64_t kMaxErrorBody = 64 << 10;

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Whether the comma-separated header value `list` holds `token` (in any case).
bool has_token(std::string_view list, std::string_view token) {
  for (;;) {
    const std::size_t comma = list.find(',');
    if (equals_ignoring_case(trimmed(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) return false;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

bool HttpAnswerReader::read(std::string_view method, std::uint64_t limit) {
  std::uint64_t length = 0;
  bool has_length = false, chunked = false, close = false;
  do {  // 1xx answers (100 Continue) come before the real one: skipped
    auto status_line = head_line();
    if (!status_line) return false;
    const std::string_view text = *status_line;
    if (!text.starts_with("HTTP/1.") || text.size() < 12 || text[8] != ' ') {
      std::string start(text.substr(0, 40));  // the server's bytes, shown printable
      std::replace_if(
          start.begin(), start.end(),
          [](char c) { return std::isprint(static_cast<unsigned char>(c)) == 0; }, '?');
      return not_http("it answered \"" + start + "\", not HTTP/1.x");
    }
    if (text[7] == '0') close = true;  // HTTP/1.0: taken as closing after the answer
    if (std::from_chars(text.data() + 9, text.data() + 12, status_).ptr != text.data() + 12 ||
        status_ < 100) {
      return not_http("its status line has no status code");
    }
    has_length = chunked = false;
    for (;;) {
      auto header = head_line();
      if (!header) return false;
      if (header->empty()) break;
      const std::size_t colon = header->find(':');
      if (colon == std::string::npos) return not_http("its head has a line without ':'");
      const std::string_view name = std::string_view(*header).substr(0, colon);
      const std::string_view value = trimmed(std::string_view(*header).substr(colon + 1));
      if (equals_ignoring_case(name, "Content-Length")) {
        std::uint64_t parsed = 0;
        const char* end = value.data() + value.size();
        if (value.empty() || std::from_chars(value.data(), end, parsed).ptr != end ||
            (has_length && length != parsed)) {
          return not_http("its Content-Length is not one number");
        }
        length = parsed;
        has_length = true;
      } else if (equals_ignoring_case(name, "Transfer-Encoding")) {
        chunked = has_token(value, "chunked");
      } else if (equals_ignoring_case(name, "Connection")) {
        close = close || has_token(value, "close");
      }
    }
  } while (status_ < 200);
  const bool kept = http_success(status_);
  const std::uint64_t bound = kept ? limit : kMaxErrorBody;
  std::string* body = kept ? &body_ : nullptr;
  bool whole = true;  // the body was read to its end
  if (method == "HEAD" || status_ == 204 || status_ == 304) {
    // no body
  } else if (chunked) {
    whole = chunks(bound, body);
  } else if (has_length) {
    whole = length <= bound ? bytes(length, body) : refuse(kept);
  } else {
    close = true;  // the body ends with the stream
    whole = to_the_end(bound, body);
  }
  if (!whole) return too_big_ && !kept;  // an error page left unread: the answer stands
  reusable_ = !close && at_ == buffer_.size();
  return true;
}

bool HttpAnswerReader::more() {
  buffer_.erase(0, at_);  // consumed: what is left is part of a line at most
  at_ = 0;
  char chunk[64 << 10];
  const std::size_t got = connection_.receive(chunk, sizeof chunk, deadline_);
  if (got == 0) {
    ended_ = Ended::stream;
    return false;
  }
  received_ = true;
  buffer_.append(chunk, got);
  buffer_peak_ = std::max(buffer_peak_, buffer_.size());
  return true;
}

bool HttpAnswerReader::not_http(std::string why) {
  ended_ = Ended::not_http;
  what_ = std::move(why);
  return false;
}

bool HttpAnswerReader::refuse(bool kept) {
  too_big_ = true;
  if (kept) ended_ = Ended::too_big;
  return false;
}

std::optional<std::string> HttpAnswerReader::line() {
  std::size_t end = 0;
  while ((end = buffer_.find("\r\n", at_)) == std::string::npos) {
    if (buffer_.size() - at_ > kMaxLine) {
      not_http("a line of its head is over 16 KiB");
      return std::nullopt;
    }
    if (!more()) return std::nullopt;
  }
  std::string text = buffer_.substr(at_, end - at_);
  at_ = end + 2;
  return text;
}

std::optional<std::string> HttpAnswerReader::head_line() {
  if (head_lines_++ == kMaxHeadLines) {
    not_http("its head, 1xx answers and trailer are over 100 lines");
    return std::nullopt;
  }
  return line();
}

bool HttpAnswerReader::bytes(std::uint64_t count, std::string* out) {
  const std::size_t held = std::min<std::uint64_t>(count, buffer_.size() - at_);
  if (out != nullptr) out->append(buffer_, at_, held);
  at_ += held;
  count -= held;
  if (out != nullptr && count > 0) {
    // Grown a MiB at a time as bytes come: a length a server declares but never sends costs
    // no memory.
    std::size_t filled = out->size(), end = filled;
    while (count > 0) {
      if (filled == end) {
        end += std::min<std::uint64_t>(count, 1 << 20);
        out->resize(end);
      }
      const std::size_t got = connection_.receive(out->data() + filled, end - filled, deadline_);
      if (got == 0) {
        ended_ = Ended::stream;
        out->resize(filled);
        return false;
      }
      received_ = true;
      filled += got;
      count -= got;
    }
    return true;
  }
  while (count > 0) {
    if (!more()) return false;
    const std::size_t take = std::min<std::uint64_t>(count, buffer_.size() - at_);
    at_ += take;
    count -= take;
  }
  return true;
}

bool HttpAnswerReader::chunks(std::uint64_t bound, std::string* out) {
  for (std::uint64_t total = 0;;) {
    auto size_line = line();
    if (!size_line) return false;
    std::uint64_t size = 0;
    const std::string_view text = *size_line;
    const auto parsed = std::from_chars(text.data(), text.data() + text.size(), size, 16);
    if (parsed.ec != std::errc() || parsed.ptr == text.data()) {
      return not_http("a chunk of its body has no size");
    }
    if (size == 0) break;
    if (size > bound - total) return refuse(out != nullptr);
    total += size;
    if (!bytes(size, out) || !bytes(2, nullptr)) return false;
  }
  for (;;) {  // the trailer, up to its empty line
    auto trailer = head_line();
    if (!trailer) return false;
    if (trailer->empty()) return true;
  }
}

bool HttpAnswerReader::to_the_end(std::uint64_t bound, std::string* out) {
  for (std::uint64_t total = 0;;) {
    const std::uint64_t held = buffer_.size() - at_;
    if (held > bound - total) return refuse(out != nullptr);
    total += held;
    if (out != nullptr) out->append(buffer_, at_, held);
    at_ = buffer_.size();
    if (!more()) {
      // Only a clean end (TLS's close_notify, a plain stream's end) ends the body: an end without
      // close_notify, a reset or a timeout may have cut it short, an I/O error.
      if (!connection_.closed()) return false;
      ended_ = Ended::answered;
      return true;
    }
  }
}

}  // namespace cubby
