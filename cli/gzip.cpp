#include "gzip.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace cubby::cli {
namespace {

constexpr int kGzipWindowBits = 15 + 16;  // 15: the largest window; +16: gzip header and trailer
constexpr int kAutoWindowBits = 15 + 32;  // +32: inflate detects gzip or zlib headers
constexpr std::size_t kChunk = 1 << 16;

}  // namespace

bool wants_gzip(std::string_view file) {
  std::string lower(file);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.ends_with(".gz") || lower.ends_with(".tgz");
}

struct GzipWriter::State {
  z_stream stream{};
  bool ready = false;
};

GzipWriter::GzipWriter(Sink sink) : state_(std::make_unique<State>()), sink_(std::move(sink)) {
  state_->ready = deflateInit2(&state_->stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits,
                               8, Z_DEFAULT_STRATEGY) == Z_OK;
}

GzipWriter::~GzipWriter() {
  if (state_->ready) deflateEnd(&state_->stream);
}

std::string GzipWriter::deflate_all(std::string_view bytes, int flush) {
  if (!state_->ready) return "cannot start gzip compression (out of memory)";
  z_stream& stream = state_->stream;
  // zlib's interface takes non-const input; it never writes through next_in.
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  std::array<char, kChunk> out{};
  int status = Z_OK;
  do {
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = static_cast<uInt>(out.size());
    status = deflate(&stream, flush);
    if (status == Z_STREAM_ERROR) return "gzip compression failed";
    const std::size_t produced = out.size() - stream.avail_out;
    if (produced > 0) {
      if (std::string why = sink_(std::string_view(out.data(), produced)); !why.empty()) return why;
    }
  } while (stream.avail_out == 0 || (flush == Z_FINISH && status != Z_STREAM_END));
  return {};
}

std::string GzipWriter::write(std::string_view bytes) {
  // avail_in is 32-bit: feed huge inputs in slices.
  constexpr std::size_t kSlice = 1u << 30;
  while (!bytes.empty()) {
    const std::size_t size = std::min(bytes.size(), kSlice);
    if (std::string why = deflate_all(bytes.substr(0, size), Z_NO_FLUSH); !why.empty()) return why;
    bytes.remove_prefix(size);
  }
  return {};
}

std::string GzipWriter::finish() { return deflate_all({}, Z_FINISH); }

bool starts_with_gzip_magic(std::istream& in) {
  if (in.peek() != 0x1f) return false;
  in.get();
  const bool second = in.peek() == 0x8b;
  in.unget();
  return second;
}

struct GunzipBuf::State {
  z_stream stream{};
  bool ready = false;
  std::array<char, kChunk> in{};
};

GunzipBuf::GunzipBuf(std::istream& source) : state_(std::make_unique<State>()), source_(source) {
  state_->ready = inflateInit2(&state_->stream, kAutoWindowBits) == Z_OK;
  if (!state_->ready) error_ = "cannot start gzip decompression (out of memory)";
}

GunzipBuf::~GunzipBuf() {
  if (state_->ready) inflateEnd(&state_->stream);
}

GunzipBuf::int_type GunzipBuf::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  out_.resize(kChunk);
  std::size_t produced = 0;
  z_stream& stream = state_->stream;
  while (produced == 0 && !ended_ && error_.empty()) {
    if (stream.avail_in == 0) {
      source_.read(state_->in.data(), static_cast<std::streamsize>(state_->in.size()));
      stream.next_in = reinterpret_cast<Bytef*>(state_->in.data());
      stream.avail_in = static_cast<uInt>(source_.gcount());
      if (stream.avail_in == 0) {
        error_ = "the gzip stream is truncated";
        break;
      }
    }
    stream.next_out = reinterpret_cast<Bytef*>(out_.data());
    stream.avail_out = static_cast<uInt>(out_.size());
    const int status = inflate(&stream, Z_NO_FLUSH);
    produced = out_.size() - stream.avail_out;
    if (status == Z_STREAM_END) {
      ended_ = true;  // one gzip member: what follows it is ignored
    } else if (status != Z_OK && status != Z_BUF_ERROR) {
      error_ = "the gzip stream is corrupt";
    }
  }
  if (produced == 0) return traits_type::eof();
  setg(out_.data(), out_.data(), out_.data() + produced);
  return traits_type::to_int_type(*gptr());
}

const std::string& GunzipBuf::finish() {
  std::size_t unread = 0;
  while (error_.empty()) {
    unread += static_cast<std::size_t>(egptr() - gptr());
    setg(eback(), egptr(), egptr());  // what is left of the get area: passed over
    if (unread > kMaxUnreadTail) {
      error_ = "the gzip stream holds more data after the archive's end than an archive pads";
      break;
    }
    if (traits_type::eq_int_type(underflow(), traits_type::eof())) break;
  }
  return error_;
}

}  // namespace cubby::cli
