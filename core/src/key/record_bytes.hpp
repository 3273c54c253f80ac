// The byte vocabulary of the scan's files kept between processes (scan_record.hpp, scan_book.hpp):
// length-prefixed strings and lists of them, read back bounds-checked. Internal; header-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/bytes.hpp"
#include "util/hash.hpp"

namespace cubby {

// str := length:u32 bytes         list := count:u32 str*        (integers little-endian)
inline void put_str(std::string& out, std::string_view text) {
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(text.size()));
  out.append(text);
}

inline void put_list(std::string& out, const std::vector<std::string>& list) {
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(list.size()));
  for (const std::string& item : list) put_str(out, item);
}

// Reads those forms from `bytes`, every read bounds-checked: a failed read leaves `ok` false and
// every later read fails too (returning zeros and empty strings).
class RecordReader {
 public:
  explicit RecordReader(std::string_view bytes) : bytes_(bytes) {}
  bool ok() const { return ok_; }
  bool at_end() const { return at_ == bytes_.size(); }

  template <class T>
  T integer() {
    if (!ok_ || bytes_.size() - at_ < sizeof(T)) {
      ok_ = false;
      return T{};
    }
    const T value = load_le<T>(bytes_, at_);
    at_ += sizeof(T);
    return value;
  }
  std::string_view raw(std::size_t size) {
    if (!ok_ || bytes_.size() - at_ < size) {
      ok_ = false;
      return {};
    }
    const std::string_view out = bytes_.substr(at_, size);
    at_ += size;
    return out;
  }
  std::string str() { return std::string(raw(integer<std::uint32_t>())); }
  // A count of items each at least `min_bytes` long: false (and not ok) when more than the bytes
  // left can hold, so a corrupt count never reserves memory.
  bool fits(std::uint32_t count, std::size_t min_bytes) {
    if (ok_ && count <= (bytes_.size() - at_) / min_bytes) return true;
    ok_ = false;
    return false;
  }
  std::vector<std::string> list() {
    const auto count = integer<std::uint32_t>();
    std::vector<std::string> out;
    if (!fits(count, 4)) return out;  // each item takes at least its 4-byte length
    out.reserve(count);
    for (std::uint32_t i = 0; i < count && ok_; ++i) out.push_back(str());
    return out;
  }

 private:
  std::string_view bytes_;
  std::size_t at_ = 0;
  bool ok_ = true;
};

// The frame of such a file: magic version:u32 lexer:u32 body checksum, the checksum the 16-byte
// hash128 of everything before it. start_record writes the head, seal_record appends the checksum.
inline std::string start_record(std::string_view magic, std::uint32_t version,
                                std::uint32_t lexer) {
  std::string out(magic);
  put_le<std::uint32_t>(out, version);
  put_le<std::uint32_t>(out, lexer);
  return out;
}

inline void seal_record(std::string& out) {
  const auto checksum = hash128(out);
  out.append(reinterpret_cast<const char*>(checksum.data()), checksum.size());
}

// A reader of the body of `bytes` (which it views: keep them alive), if they start with `magic`,
// end with the checksum of the rest and carry `version` and `lexer`; nullopt otherwise.
inline std::optional<RecordReader> open_record(std::string_view bytes, std::string_view magic,
                                               std::uint32_t version, std::uint32_t lexer) {
  constexpr std::size_t kChecksumBytes = 16;
  if (bytes.size() < magic.size() + 8 + kChecksumBytes || !bytes.starts_with(magic)) {
    return std::nullopt;
  }
  const std::string_view body = bytes.substr(0, bytes.size() - kChecksumBytes);
  const auto checksum = hash128(body);
  if (std::memcmp(checksum.data(), bytes.data() + body.size(), kChecksumBytes) != 0) {
    return std::nullopt;
  }
  RecordReader in(body.substr(magic.size()));
  if (in.integer<std::uint32_t>() != version || in.integer<std::uint32_t>() != lexer) {
    return std::nullopt;
  }
  return in;
}

}  // namespace cubby
