// Byte helpers, the one home for them: little-endian fixed-width integers and hex text.
// Internal (not installed); header-only. Every on-disk and on-wire format of cubby (entries,
// blob keys, key fields, the remote envelope, CUBIN/ELF reading) stores integers little-endian
// whatever the host's order, and shows bytes as lowercase hex.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace cubby {

// ---- little-endian ----

// Writes `value` as sizeof(T) little-endian bytes at `out` (two's complement for signed T).
template <std::integral T>
void store_le(char* out, T value) noexcept {
  using U = std::make_unsigned_t<T>;
  const auto bits = static_cast<U>(value);
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[i] = static_cast<char>(static_cast<std::uint8_t>(bits >> (8 * i)));
  }
}

// Appends `value` as sizeof(T) little-endian bytes to `out`.
template <std::integral T>
void put_le(std::string& out, T value) {
  char bytes[sizeof(T)];
  store_le(bytes, value);
  out.append(bytes, sizeof(T));
}

// The T stored little-endian in the sizeof(T) bytes at `in` (the caller has checked they exist).
template <std::integral T>
T load_le(const char* in) noexcept {
  using U = std::make_unsigned_t<T>;
  U bits = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    bits = static_cast<U>(
        bits | static_cast<U>(static_cast<U>(static_cast<unsigned char>(in[i])) << (8 * i)));
  }
  return static_cast<T>(bits);
}

// The T stored little-endian at `offset` of `bytes`. Requires offset + sizeof(T) <= bytes.size().
template <std::integral T>
T load_le(std::string_view bytes, std::size_t offset) noexcept {
  return load_le<T>(bytes.data() + offset);
}

// ---- hex ----

// Appends the two lowercase hex digits of `byte` to `out`.
inline void append_hex(std::string& out, std::uint8_t byte) {
  static constexpr char kDigits[] = "0123456789abcdef";
  out += kDigits[byte >> 4];
  out += kDigits[byte & 0xf];
}

// Lowercase hex of `size` bytes at `bytes` (two digits a byte, no separators).
inline std::string to_hex(const std::uint8_t* bytes, std::size_t size) {
  std::string out;
  out.reserve(2 * size);
  for (std::size_t i = 0; i < size; ++i) append_hex(out, bytes[i]);
  return out;
}

inline std::string to_hex(std::string_view bytes) {
  return to_hex(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

// The value (0-15) of the hex digit `c`, either case; -1 when `c` is not a hex digit.
constexpr int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// True when every character of `text` is a lowercase hex digit (0-9, a-f); true for "".
constexpr bool is_lower_hex(std::string_view text) noexcept {
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Decodes the hex digits `hex` (either case) into hex.size() / 2 bytes at `out`. Requires an even
// hex.size(). Returns std::string_view::npos on success, else the index in `hex` of the first
// character that is not a hex digit (then `out` is partly written).
inline std::size_t from_hex(std::string_view hex, std::uint8_t* out) noexcept {
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    const int hi = hex_value(hex[i]);
    const int lo = hex_value(hex[i + 1]);
    if (hi < 0) return i;
    if (lo < 0) return i + 1;
    out[i / 2] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return std::string_view::npos;
}

}  // namespace cubby
