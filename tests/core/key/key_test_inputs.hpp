// Key inputs shared by the tests of core/src/key (test_key, test_key_inputs, test_include_scan).
#pragma once

#include <array>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>

#include "cubby/key.hpp"
#include "util/bytes.hpp"

namespace cubby {

// Readable failure output.
inline void PrintTo(const HeaderDigest& h, std::ostream* os) {
  *os << "{" << h.include << ", " << (h.resolved ? h.path : "(unresolved)") << ", "
      << to_hex(h.content_hash.data(), h.content_hash.size()) << "}";
}

namespace testing {

inline std::array<std::uint8_t, 16> bytes16(std::uint8_t seed) {
  std::array<std::uint8_t, 16> out{};
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::uint8_t>(seed + i);
  }
  return out;
}

inline HeaderDigest resolved_header(std::string include, std::string path, std::uint8_t seed) {
  HeaderDigest h;
  h.include = std::move(include);
  h.path = std::move(path);
  h.resolved = true;
  h.content_hash = bytes16(seed);
  return h;
}

inline HeaderDigest unresolved_header(std::string include) {
  HeaderDigest h;
  h.include = std::move(include);
  return h;
}

inline KeyInputs base_inputs() {
  KeyInputs in;
  in.format_version = 1;
  in.nvrtc_version = "13.0";
  in.nvrtc_identity = "libnvrtc.so.13:size=123456:hash=0011223344556677";
  in.toolkit_headers = "2;00112233445566778899aabbccddeeff";
  in.arch = "sm_90";
  in.options = {"-std=c++17", "-DN=4", "--use_fast_math"};
  in.source =
      "#include <detail/ops.cuh>\nnamespace ns { template <class T> __global__ void k(T*) {} }\n";
  in.program_name = "kernels.cu";
  in.name_expressions = {"ns::k<float>", "ns::k<double>"};
  in.headers = {resolved_header("detail/ops.cuh", "/proj/inc/detail/ops.cuh", 7),
                unresolved_header("cuda/std/mdspan")};
  return in;
}

}  // namespace testing
}  // namespace cubby
