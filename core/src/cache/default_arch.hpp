// The architecture a request that names none compiles for: Config::default_arch (CUBBY_ARCH),
// else GPU 0's (gpu_arch), else sm_90. Resolved on first use (constructing one asks no driver),
// then kept. Thread-safe.
#pragma once

#include <mutex>
#include <string>

namespace cubby {

class DefaultArch {
 public:
  explicit DefaultArch(std::string configured) : arch_(std::move(configured)) {}

  const std::string& get() const;

 private:
  mutable std::once_flag once_;
  mutable std::string arch_;
};

}  // namespace cubby
