// The plain types that layers below their owners share: values only, no function. This is the
// bottom layer of ARCHITECTURE.md's list (ci/check_layers.py): it includes no other cubby header,
// so the CUDA layer (which compiles and loads an Entry) needs nothing of the format layer (which
// encodes one: cubby/entry.hpp) to name it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cubby {

// What a payload holds. The numbers are the entry grammar's `kind` byte (cubby/entry.hpp).
enum class PayloadKind : std::uint8_t { cubin = 1, ptx = 2, ltoir = 3, blob = 4 };

// One compile's result: what the store keeps for one key (encoded by encode_entry, entry.hpp).
struct Entry {
  PayloadKind kind = PayloadKind::cubin;
  std::map<std::string, std::string> lowered_names;  // name expression -> mangled name (NVRTC's)
  std::string log;                                   // NVRTC's compile log (warnings)
  std::uint64_t compile_us = 0;                      // what the original compile cost
  std::vector<std::string> options;                  // options the payload was compiled with
  std::int64_t created_ms = 0;                       // Unix time of the compile, milliseconds
  std::string payload;                               // CUBIN / PTX / LTO-IR bytes

  friend bool operator==(const Entry&, const Entry&) = default;
};

}  // namespace cubby
