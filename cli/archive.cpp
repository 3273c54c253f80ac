// ustar writing and reading for `cubby export` / `cubby import`; format in archive.hpp.
#include "archive.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <optional>

namespace cubby::cli {
namespace {

constexpr std::size_t kBlock = 512;
// The most bytes read_tar allocates ahead of the bytes it has read.
constexpr std::size_t kChunk = std::size_t{1} << 20;
using Block = std::array<char, kBlock>;

void put_octal(Block& block, std::size_t offset, std::size_t width, std::uint64_t value) {
  // width - 1 octal digits, zero-padded, then NUL.
  char text[32];
  std::snprintf(text, sizeof text, "%0*llo", static_cast<int>(width - 1),
                static_cast<unsigned long long>(value));
  std::memcpy(block.data() + offset, text, width - 1);
  block[offset + width - 1] = '\0';
}

std::uint64_t header_sum(const Block& block) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    // The checksum field counts as spaces.
    sum += (i >= 148 && i < 156) ? static_cast<unsigned char>(' ')
                                 : static_cast<unsigned char>(block[i]);
  }
  return sum;
}

// The octal number in block[offset, offset + width): false if it is not one.
bool get_octal(const Block& block, std::size_t offset, std::size_t width, std::uint64_t& value) {
  value = 0;
  std::size_t i = offset;
  const std::size_t end = offset + width;
  while (i < end && block[i] == ' ') ++i;
  bool digits = false;
  for (; i < end && block[i] >= '0' && block[i] <= '7'; ++i) {
    if (value > (UINT64_MAX >> 3)) return false;
    value = value * 8 + static_cast<std::uint64_t>(block[i] - '0');
    digits = true;
  }
  for (; i < end; ++i) {
    if (block[i] != ' ' && block[i] != '\0') return false;
  }
  return digits;
}

// The bytes left in `in` from its position, or nullopt when it cannot tell (a pipe).
std::optional<std::uint64_t> bytes_left(std::istream& in) {
  const std::istream::pos_type here = in.tellg();
  if (here == std::istream::pos_type(-1)) return std::nullopt;
  in.seekg(0, std::ios::end);
  const std::istream::pos_type end = in.tellg();
  in.seekg(here);
  if (end == std::istream::pos_type(-1) || !in || end < here) {
    in.clear();
    in.seekg(here);
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(end - here);
}

// Appends `size` bytes of `in` to `out`, allocating at most kChunk ahead of what was read; false
// if the stream ends first.
bool read_chunked(std::istream& in, std::uint64_t size, std::string& out) {
  while (size > 0) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(size, kChunk));
    const std::size_t before = out.size();
    out.resize(before + chunk);
    in.read(out.data() + before, static_cast<std::streamsize>(chunk));
    if (in.gcount() != static_cast<std::streamsize>(chunk)) return false;
    size -= chunk;
  }
  return true;
}

// Skips `size` bytes of `in`; false if the stream ends first.
bool skip(std::istream& in, std::uint64_t size) {
  while (size > 0) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(size, kChunk));
    in.ignore(static_cast<std::streamsize>(chunk));
    if (in.gcount() != static_cast<std::streamsize>(chunk)) return false;
    size -= chunk;
  }
  return true;
}

bool write_padding(std::ostream& out, std::size_t size) {
  static const Block zeros{};
  const std::size_t pad = (kBlock - size % kBlock) % kBlock;
  out.write(zeros.data(), static_cast<std::streamsize>(pad));
  return static_cast<bool>(out);
}

}  // namespace

bool write_tar_member(std::ostream& out, std::string_view name, std::string_view bytes,
                      std::int64_t mtime) {
  if (name.size() > 99) return false;
  Block header{};
  std::memcpy(header.data(), name.data(), name.size());
  put_octal(header, 100, 8, 0664);
  put_octal(header, 108, 8, 0);
  put_octal(header, 116, 8, 0);
  put_octal(header, 124, 12, bytes.size());
  put_octal(header, 136, 12, static_cast<std::uint64_t>(mtime < 0 ? 0 : mtime));
  header[156] = '0';
  std::memcpy(header.data() + 257, "ustar", 6);
  std::memcpy(header.data() + 263, "00", 2);
  put_octal(header, 148, 7, header_sum(header));
  header[155] = ' ';
  out.write(header.data(), kBlock);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out) && write_padding(out, bytes.size());
}

bool write_tar_end(std::ostream& out) {
  static const Block zeros{};
  out.write(zeros.data(), kBlock);
  out.write(zeros.data(), kBlock);
  return static_cast<bool>(out);
}

std::string read_tar(std::istream& in, std::uint64_t max_member,
                     const std::function<void(TarMember&&)>& visit) {
  for (std::uint64_t index = 0;; ++index) {
    Block header{};
    in.read(header.data(), kBlock);
    if (in.gcount() == 0) {
      return index == 0 ? "the archive is empty" : "the archive ends without its end marker";
    }
    if (in.gcount() != static_cast<std::streamsize>(kBlock)) {
      return "the archive is truncated (in a member header)";
    }
    bool zero = true;
    for (const char c : header) zero = zero && c == '\0';
    if (zero) return {};
    std::uint64_t sum = 0;
    std::uint64_t size = 0;
    if (!get_octal(header, 148, 8, sum) || sum != header_sum(header)) {
      return "member " + std::to_string(index + 1) +
             " has a bad header checksum: not a tar archive, or damaged";
    }
    if (!get_octal(header, 124, 12, size)) {
      return "member " + std::to_string(index + 1) + " has a bad size field";
    }
    TarMember member;
    member.name.assign(header.data(), ::strnlen(header.data(), 100));
    member.type = header[156];
    const std::string which = "member " + std::to_string(index + 1) + " (" + member.name + ")";
    if (size > max_member) {
      return which + " declares " + std::to_string(size) + " bytes, over the limit of " +
             std::to_string(max_member);
    }
    const std::uint64_t pad = (kBlock - size % kBlock) % kBlock;
    const auto left = bytes_left(in);
    if (left && size + pad > *left) {
      return which + " declares " + std::to_string(size) + " bytes but the archive has only " +
             std::to_string(*left) + " left: it is truncated";
    }
    // The bytes are there: one allocation. Otherwise read_chunked grows with what arrives.
    if (left && member.regular()) member.bytes.reserve(static_cast<std::size_t>(size));
    // Links, folders and other special members carry no entry: their content is skipped unread.
    const bool read = member.regular() ? read_chunked(in, size, member.bytes) : skip(in, size);
    if (!read) return "the archive is truncated (in " + which + ")";
    if (!skip(in, pad)) return "the archive is truncated (after " + which + ")";
    visit(std::move(member));
  }
}

}  // namespace cubby::cli
