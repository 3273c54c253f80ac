// Entry encoding and decoding; the grammar is documented in cubby/entry.hpp.
#include "cubby/entry.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "cubby/key.hpp"
#include "format/entry_in_place.hpp"
#include "util/bytes.hpp"
#include "util/hash.hpp"

namespace cubby {
namespace {

constexpr std::string_view kMagic = "CUBBYENT";
constexpr std::size_t kVersionOffset = 8;
constexpr std::size_t kKindOffset = 12;
constexpr std::size_t kChecksumOffset = 16;
constexpr std::size_t kChecksumSize = 16;
constexpr std::size_t kBodySizeOffset = 32;
constexpr std::size_t kKeyOffset = 40;
constexpr std::size_t kKeySize = 16;
static_assert(kKeyOffset + kKeySize == kEntryHeaderSize);
static_assert(sizeof(Key::bytes) == kKeySize);

// Requires `value.size()` < 4 GiB (names, logs and options are far smaller).
void put_str(std::string& out, std::string_view value) {
  put_le(out, static_cast<std::uint32_t>(value.size()));
  out.append(value);
}

// XXH3-128 (canonical bytes, as hash128) of `header` with its checksum field zeroed, then `body`.
std::array<std::uint8_t, 16> entry_checksum(std::string_view header, std::string_view body) {
  std::array<char, kEntryHeaderSize> zeroed{};
  std::memcpy(zeroed.data(), header.data(), kEntryHeaderSize);
  std::memset(zeroed.data() + kChecksumOffset, 0, kChecksumSize);
  return hash128(std::string_view(zeroed.data(), zeroed.size()), body);
}

// Bounds-checked little-endian reader over the body. Every read checks the remaining bytes
// first, so a corrupt length can neither read out of bounds nor cause a large allocation.
class Reader {
 public:
  Reader(std::string_view bytes, std::size_t base) : bytes_(bytes), base_(base) {}

  std::size_t remaining() const { return bytes_.size() - pos_; }
  std::size_t offset() const { return base_ + pos_; }  // position in the whole entry

  Result<std::uint64_t> u64(const char* what) { return fixed<std::uint64_t>(what); }
  Result<std::uint64_t> u32(const char* what) { return fixed<std::uint32_t>(what); }

  Result<std::string> str(const char* what) {
    auto size = u32(what);
    if (!size) return size.error();
    if (*size > remaining()) {
      return fail(Errc::corrupt, "corrupt entry: ", what, " length ", std::to_string(*size),
                  " at byte ", std::to_string(offset() - 4), " exceeds the ",
                  std::to_string(remaining()), " bytes left (truncated at byte ",
                  std::to_string(base_ + bytes_.size()), ")");
    }
    std::string value(bytes_.substr(pos_, static_cast<std::size_t>(*size)));
    pos_ += static_cast<std::size_t>(*size);
    return value;
  }

  // A count of items each taking at least `min_item_bytes`; rejects counts that cannot fit.
  Result<std::uint64_t> count(const char* what, std::size_t min_item_bytes) {
    auto value = u32(what);
    if (!value) return value.error();
    if (*value > remaining() / min_item_bytes) {
      return fail(Errc::corrupt, "corrupt entry: ", what, " ", std::to_string(*value), " at byte ",
                  std::to_string(offset() - 4), " cannot fit in the ", std::to_string(remaining()),
                  " bytes left");
    }
    return value;
  }

 private:
  template <class T>
  Result<std::uint64_t> fixed(const char* what) {
    constexpr std::size_t width = sizeof(T);
    if (remaining() < width) {
      return fail(Errc::corrupt, "corrupt entry: truncated at byte ",
                  std::to_string(base_ + bytes_.size()), " while reading ", what, " at byte ",
                  std::to_string(offset()));
    }
    const std::uint64_t value = load_le<T>(bytes_, pos_);
    pos_ += width;
    return value;
  }

  std::string_view bytes_;
  std::size_t base_;
  std::size_t pos_ = 0;
};

// `owner`: null, or the buffer `body` lies in, which the payload (its tail) then takes over.
Result<Entry> decode_body(std::string_view body, PayloadKind kind, std::string* owner) {
  Entry entry;
  entry.kind = kind;
  Reader in(body, kEntryHeaderSize);

  auto names = in.count("name count", 8);
  if (!names) return names.error();
  for (std::uint64_t i = 0; i < *names; ++i) {
    auto expression = in.str("name expression");
    if (!expression) return expression.error();
    auto lowered = in.str("lowered name");
    if (!lowered) return lowered.error();
    if (!entry.lowered_names.empty() && !(entry.lowered_names.rbegin()->first < *expression)) {
      return fail(Errc::corrupt, "corrupt entry: name expressions are not sorted and unique ",
                  "(at \"", *expression, "\")");
    }
    entry.lowered_names.emplace_hint(entry.lowered_names.end(), std::move(*expression),
                                     std::move(*lowered));
  }

  auto log = in.str("log");
  if (!log) return log.error();
  entry.log = std::move(*log);

  auto compile_us = in.u64("compile_us");
  if (!compile_us) return compile_us.error();
  entry.compile_us = *compile_us;

  auto options = in.count("option count", 4);
  if (!options) return options.error();
  entry.options.reserve(static_cast<std::size_t>(*options));
  for (std::uint64_t i = 0; i < *options; ++i) {
    auto option = in.str("option");
    if (!option) return option.error();
    entry.options.push_back(std::move(*option));
  }

  auto created_ms = in.u64("created_ms");
  if (!created_ms) return created_ms.error();
  entry.created_ms = static_cast<std::int64_t>(*created_ms);

  auto payload_size = in.u64("payload size");
  if (!payload_size) return payload_size.error();
  if (*payload_size != in.remaining()) {
    return fail(Errc::corrupt, "corrupt entry: payload size ", std::to_string(*payload_size),
                " does not match the ", std::to_string(in.remaining()), " bytes left in the body");
  }
  if (owner != nullptr) {
    const std::size_t payload_bytes = in.remaining();
    entry.payload = std::move(*owner);
    entry.payload.erase(0, entry.payload.size() - payload_bytes);
  } else {
    entry.payload.assign(body.substr(body.size() - in.remaining()));
  }
  return entry;
}

}  // namespace

const char* payload_kind_name(PayloadKind kind) noexcept {
  switch (kind) {
    case PayloadKind::cubin:
      return "cubin";
    case PayloadKind::ptx:
      return "ptx";
    case PayloadKind::ltoir:
      return "ltoir";
    case PayloadKind::blob:
      return "blob";
  }
  return "unknown";
}

EntryFormat entry_format(std::string_view bytes) noexcept {
  if (bytes.size() < kVersionOffset + 4 || bytes.substr(0, kMagic.size()) != kMagic) {
    return EntryFormat::current;
  }
  const auto version = load_le<std::uint32_t>(bytes, kVersionOffset);
  if (version == kEntryFormatVersion) return EntryFormat::current;
  return version < kEntryFormatVersion ? EntryFormat::older : EntryFormat::newer;
}

std::string encode_entry(const Key& key, const Entry& entry) {
  std::size_t body_estimate = 64 + entry.log.size() + entry.payload.size();
  for (const auto& [expression, lowered] : entry.lowered_names) {
    body_estimate += 8 + expression.size() + lowered.size();
  }
  for (const auto& option : entry.options) body_estimate += 4 + option.size();

  std::string out;
  out.reserve(kEntryHeaderSize + body_estimate);
  out.append(kMagic);
  put_le(out, kEntryFormatVersion);
  put_le(out, static_cast<std::uint8_t>(entry.kind));
  out.append(3, '\0');              // reserved
  out.append(kChecksumSize, '\0');  // checksum, filled in below
  put_le(out, std::uint64_t{0});    // body_size, filled in below
  out.append(reinterpret_cast<const char*>(key.bytes.data()), key.bytes.size());

  put_le(out, static_cast<std::uint32_t>(entry.lowered_names.size()));
  for (const auto& [expression, lowered] : entry.lowered_names) {
    put_str(out, expression);
    put_str(out, lowered);
  }
  put_str(out, entry.log);
  put_le(out, entry.compile_us);
  put_le(out, static_cast<std::uint32_t>(entry.options.size()));
  for (const auto& option : entry.options) put_str(out, option);
  put_le(out, entry.created_ms);
  put_le(out, static_cast<std::uint64_t>(entry.payload.size()));
  out.append(entry.payload);

  const std::uint64_t body_size = out.size() - kEntryHeaderSize;
  store_le(out.data() + kBodySizeOffset, body_size);
  const std::string_view view(out);
  const auto checksum =
      entry_checksum(view.substr(0, kEntryHeaderSize), view.substr(kEntryHeaderSize));
  std::memcpy(out.data() + kChecksumOffset, checksum.data(), checksum.size());
  return out;
}

namespace {

// decode_entry's checks and decoding; `owner` as for decode_body.
Result<Entry> decode_checked(std::string_view bytes, const Key& key, std::string* owner) {
  const std::size_t magic_bytes = std::min(bytes.size(), kMagic.size());
  if (bytes.substr(0, magic_bytes) != kMagic.substr(0, magic_bytes)) {
    return fail(Errc::corrupt, "corrupt entry: bad magic (not a cubby entry)");
  }
  if (const EntryFormat format = entry_format(bytes); format != EntryFormat::current) {
    const auto version = load_le<std::uint32_t>(bytes, kVersionOffset);
    const bool older = format == EntryFormat::older;
    return fail(Errc::not_found, "entry of format version ", std::to_string(version), ", ",
                older ? "older" : "newer", " than this cubby's version ",
                std::to_string(kEntryFormatVersion), ": written by ",
                older ? "an older" : "a newer",
                " cubby release, which derives other keys; a miss for this one",
                older ? " (gc evicts it once unused)" : " (use that release to read it)");
  }
  if (bytes.size() < kEntryHeaderSize) {
    return fail(Errc::corrupt, "corrupt entry: truncated at byte ", std::to_string(bytes.size()),
                " (the header alone takes ", std::to_string(kEntryHeaderSize), " bytes)");
  }
  const auto kind_byte = static_cast<std::uint8_t>(bytes[kKindOffset]);
  if (kind_byte < 1 || kind_byte > 4) {
    return fail(Errc::corrupt, "corrupt entry: unknown payload kind ", std::to_string(kind_byte));
  }
  for (std::size_t i = kKindOffset + 1; i < kKindOffset + 4; ++i) {
    if (bytes[i] != '\0') {
      return fail(Errc::corrupt, "corrupt entry: reserved header byte ", std::to_string(i),
                  " is not zero");
    }
  }
  const std::uint64_t body_size = load_le<std::uint64_t>(bytes, kBodySizeOffset);
  const std::size_t available = bytes.size() - kEntryHeaderSize;
  if (body_size > available) {
    return fail(Errc::corrupt, "corrupt entry: truncated at byte ", std::to_string(bytes.size()),
                " (the header announces ", std::to_string(body_size), " body bytes, ",
                std::to_string(available), " are present)");
  }
  if (body_size < available) {
    return fail(Errc::corrupt, "corrupt entry: ", std::to_string(available - body_size),
                " trailing bytes after the announced end at byte ",
                std::to_string(kEntryHeaderSize + body_size));
  }
  const std::string_view header = bytes.substr(0, kEntryHeaderSize);
  const std::string_view body = bytes.substr(kEntryHeaderSize);
  const auto computed = entry_checksum(header, body);
  if (std::memcmp(computed.data(), bytes.data() + kChecksumOffset, kChecksumSize) != 0) {
    const auto* stored = reinterpret_cast<const std::uint8_t*>(bytes.data() + kChecksumOffset);
    return fail(Errc::corrupt, "corrupt entry: checksum mismatch (stored ",
                to_hex(stored, kChecksumSize), ", computed ",
                to_hex(computed.data(), computed.size()), ")");
  }
  const auto* stored_key = reinterpret_cast<const std::uint8_t*>(bytes.data() + kKeyOffset);
  if (std::memcmp(stored_key, key.bytes.data(), kKeySize) != 0) {
    return fail(Errc::corrupt, "corrupt entry: it belongs to key ", to_hex(stored_key, kKeySize),
                ", not to key ", key.hex(), " it was found under (copied or linked there)");
  }
  return decode_body(body, static_cast<PayloadKind>(kind_byte), owner);
}

}  // namespace

Result<Entry> decode_entry(std::string_view bytes, const Key& key) {
  return decode_checked(bytes, key, nullptr);
}

Result<Entry> decode_entry_in_place(std::string&& bytes, const Key& key) {
  return decode_checked(bytes, key, &bytes);
}

}  // namespace cubby
