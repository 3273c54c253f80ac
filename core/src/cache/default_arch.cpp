#include "cache/default_arch.hpp"

#include "cubby/driver.hpp"

namespace cubby {

const std::string& DefaultArch::get() const {
  std::call_once(once_, [this] {
    if (!arch_.empty()) return;
    if (auto arch = gpu_arch()) {
      arch_ = *arch;
    } else {
      arch_ = "sm_90";
    }
  });
  return arch_;
}

}  // namespace cubby
