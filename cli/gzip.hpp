// gzip for `cubby export` / `cubby import` (zlib): an archive named *.tar.gz or *.tgz is written
// compressed, and import reads a compressed or a plain archive alike (told apart by the magic).
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <streambuf>
#include <string>
#include <string_view>

namespace cubby::cli {

// Whether `file` names a gzip'd archive: it ends with ".tar.gz", ".tgz" or ".gz" (any case).
bool wants_gzip(std::string_view file);

// Compresses what `write` is given into gzip format, handing the compressed bytes to `sink`
// (which returns an error message, or "" when it wrote them). Every call returns "" or what went
// wrong; finish() flushes the gzip trailer and must be called once, last.
class GzipWriter {
 public:
  using Sink = std::function<std::string(std::string_view)>;
  explicit GzipWriter(Sink sink);
  ~GzipWriter();
  GzipWriter(const GzipWriter&) = delete;
  GzipWriter& operator=(const GzipWriter&) = delete;

  std::string write(std::string_view bytes);
  std::string finish();

 private:
  std::string deflate_all(std::string_view bytes, int flush);
  struct State;
  std::unique_ptr<State> state_;
  Sink sink_;
};

// Whether the next bytes of `in` are the gzip magic (1f 8b); reads nothing.
bool starts_with_gzip_magic(std::istream& in);

// A stream buffer that yields the bytes of the gzip stream `source` decompressed (its first
// member). A corrupt or truncated gzip stream ends the stream early and sets error() (the tar
// reader then reports a truncated archive too).
class GunzipBuf : public std::streambuf {
 public:
  explicit GunzipBuf(std::istream& source);
  ~GunzipBuf() override;
  GunzipBuf(const GunzipBuf&) = delete;
  GunzipBuf& operator=(const GunzipBuf&) = delete;

  const std::string& error() const { return error_; }

  // Reads what the reader left of the gzip member (the tar end's padding, the trailer), so that
  // the member's trailer is checked: its CRC-32 and length (ISIZE) must match what was
  // decompressed. Returns error(): set when the member is truncated (its trailer cut off),
  // corrupt, or holds over kMaxUnreadTail bytes past what the reader took.
  const std::string& finish();
  static constexpr std::size_t kMaxUnreadTail = std::size_t{1} << 20;

 protected:
  int_type underflow() override;

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::istream& source_;
  bool ended_ = false;
  std::string error_;
  std::string out_;  // the decompressed bytes handed out by the current get area
};

}  // namespace cubby::cli
