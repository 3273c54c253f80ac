// Host side of the example suite: test shapes, input bytes and expected output bytes for every
// element type, so a launch test compares bytes exactly (all values are small integers, exact in
// every element type, __half and __nv_bfloat16 included).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mdspan_programs.hpp"

namespace cubby::examples {

// The extents used for each rank (more elements than one 32-thread block, so the grid-stride
// loop runs) and layout_stride's strides (rows padded by 2 elements, innermost stride 2 for
// rank 1), so that a wrong mapping writes a wrong element.
inline Shape shape_for(const Program& program) {
  const std::array<std::array<long long, 3>, 4> extents = {
      {{1, 1, 1}, {37, 1, 1}, {5, 7, 1}, {3, 5, 6}}};
  Shape shape;
  for (std::size_t r = 0; r < 3; ++r) shape.extents[r] = extents[program.rank][r];
  if (program.layout == Layout::stride) {
    if (program.rank == 1) shape.strides[0] = 2;
    if (program.rank >= 2) {
      const std::size_t last = program.rank - 1;
      shape.strides[last] = 1;
      shape.strides[last - 1] = shape.extents[last] + 2;
      if (program.rank == 3) shape.strides[0] = shape.strides[1] * shape.extents[1];
    }
  }
  return shape;
}

// Every multi-index's buffer offset under the program's layout, in row-major index order.
inline std::vector<std::size_t> offsets_of(const Program& program, const Shape& shape) {
  std::size_t total = 1;
  for (std::size_t r = 0; r < program.rank; ++r) total *= std::size_t(shape.extents[r]);
  std::vector<std::size_t> offsets;
  for (std::size_t linear = 0; linear < total; ++linear) {
    std::array<std::size_t, 3> index{};
    std::size_t rest = linear;
    for (std::size_t r = program.rank; r-- > 0;) {
      index[r] = rest % std::size_t(shape.extents[r]);
      rest /= std::size_t(shape.extents[r]);
    }
    std::size_t offset = 0;
    switch (program.layout) {
      case Layout::right:
        for (std::size_t r = 0; r < program.rank; ++r)
          offset = offset * std::size_t(shape.extents[r]) + index[r];
        break;
      case Layout::left:
        for (std::size_t r = program.rank; r-- > 0;)
          offset = offset * std::size_t(shape.extents[r]) + index[r];
        break;
      case Layout::stride:
        for (std::size_t r = 0; r < program.rank; ++r)
          offset += index[r] * std::size_t(shape.strides[r]);
        break;
    }
    offsets.push_back(offset);
  }
  return offsets;
}

// IEEE binary16 bits of a small non-negative integer (exact below 2048).
inline std::uint16_t half_bits(int value) {
  if (value == 0) return 0;
  int exponent = 0;
  while ((2 << exponent) <= value) ++exponent;
  const int mantissa = (value << (10 - exponent)) & 0x3ff;
  return static_cast<std::uint16_t>(((exponent + 15) << 10) | mantissa);
}

// The bytes of `type` holding `value` (complex: `value` + `imag` i).
inline std::string encode(const ElementType& type, int value, int imag = 0) {
  std::string bytes(type.size, '\0');
  switch (type.kind) {
    case Kind::signed_int:
    case Kind::unsigned_int: {
      const auto wide = static_cast<std::int64_t>(value);  // little-endian: low bytes first
      std::memcpy(bytes.data(), &wide, type.size);
      break;
    }
    case Kind::floating:
      if (type.size == 4) {
        const auto f = static_cast<float>(value);
        std::memcpy(bytes.data(), &f, 4);
      } else {
        const auto d = static_cast<double>(value);
        std::memcpy(bytes.data(), &d, 8);
      }
      break;
    case Kind::half: {
      const std::uint16_t bits = half_bits(value);
      std::memcpy(bytes.data(), &bits, 2);
      break;
    }
    case Kind::bfloat16: {
      const auto f = static_cast<float>(value);
      std::uint32_t bits = 0;
      std::memcpy(&bits, &f, 4);
      const auto high = static_cast<std::uint16_t>(bits >> 16);
      std::memcpy(bytes.data(), &high, 2);
      break;
    }
    case Kind::complex: {
      const ElementType part{"", type.size / 2, Kind::floating};
      bytes = encode(part, value) + encode(part, imag);
      break;
    }
  }
  return bytes;
}

// One launch test case: buffers and what `out` must hold afterwards, for out = in * a + b with
// a = 2, b = 1 (complex: in = v - v i, a = 2, b = 1 + 1 i, so out = (2v + 1) + (1 - 2v) i).
// Elements no index maps to hold kUntouched in `out` before and after.
struct Case {
  std::string in, out_before, expected, a, b;
};

inline constexpr int kUntouched = 100;

inline Case case_for(const Program& program, const ElementType& type) {
  const Shape shape = shape_for(program);
  const std::vector<std::size_t> offsets = offsets_of(program, shape);
  std::size_t elements = 1;
  for (std::size_t offset : offsets) elements = std::max(elements, offset + 1);
  const bool complex = type.kind == Kind::complex;
  Case c;
  for (std::size_t i = 0; i < elements; ++i) {
    c.in += encode(type, 0);
    c.out_before += encode(type, kUntouched, complex ? kUntouched : 0);
  }
  c.expected = c.out_before;
  for (std::size_t offset : offsets) {
    const int v = static_cast<int>(offset % 7);
    c.in.replace(offset * type.size, type.size, encode(type, v, complex ? -v : 0));
    c.expected.replace(offset * type.size, type.size,
                       encode(type, 2 * v + 1, complex ? 1 - 2 * v : 0));
  }
  c.a = encode(type, 2);
  c.b = encode(type, 1, complex ? 1 : 0);
  return c;
}

}  // namespace cubby::examples
