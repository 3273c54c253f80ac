// What the driver's tests share: whether a GPU can be used here, the two skips (a case for a
// machine without a GPU, a case that needs one), and an entry with a payload of any kind.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "cubby/driver.hpp"
#include "cubby/types.hpp"

namespace cubby::testing {

inline bool have_gpu() { return gpu_status().ok(); }

// An entry of `kind` carrying `payload`, with one name expression.
inline std::shared_ptr<const Entry> entry_of(PayloadKind kind, std::string payload) {
  auto entry = std::make_shared<Entry>();
  entry->kind = kind;
  entry->payload = std::move(payload);
  entry->lowered_names = {{"ns::k<int>", "_ZN2ns1kIiEEvv"}};
  return entry;
}

}  // namespace cubby::testing

#define SKIP_IF_GPU()               \
  if (::cubby::testing::have_gpu()) \
  GTEST_SKIP() << "a GPU is present: no-GPU behaviour not observable here"
#define SKIP_IF_NO_GPU() \
  if (!::cubby::testing::have_gpu()) GTEST_SKIP() << ::cubby::gpu_status().error().message
