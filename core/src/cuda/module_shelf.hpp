// Modules loaded ahead of their use, each under a key its loader chooses (the C API: the entry's
// key), so that the thread that needs one later takes it loaded instead of loading it itself: the
// pytest plugin's warm-up thread loads a CuPy session's recorded kernels while pytest collects.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "cubby/driver.hpp"
#include "cubby/error.hpp"
#include "cubby/types.hpp"

namespace cubby {

// Thread-safe. A module is loaded in the context current on the loading thread (device 0's
// primary context when none is, see ensure_context) and handed over only to a thread whose
// current context is that one. The shelf unloads, when destroyed, every module nobody took.
class ModuleShelf {
 public:
  // Loads `entry`'s CUBIN under `key` unless the key was asked for (take) or loaded already:
  // true when loaded now, false when skipped (asked for, loaded, not a CUBIN); a failure (no
  // GPU, no driver, a CUBIN for another architecture: cuda_error) otherwise, with nothing kept.
  Result<bool> load(const std::string& key, std::shared_ptr<const Entry> entry);

  // The module loaded under `key`, handed over (the caller unloads it from then on), or nullptr:
  // none loaded (none will be: a later load of the key is skipped), or the calling thread's
  // current context is not the one it was loaded in (it stays here). Never throws.
  CUmodule take(const std::string& key) noexcept;

  // Modules loaded and not taken.
  std::size_t size() const;

  // Whether a module was asked for (take), loaded or not: the asking thread uses the GPU now.
  bool asked_any() const;

 private:
  struct Loaded {
    CUcontext context = nullptr;
    Module module;
  };

  mutable std::mutex mutex_;
  std::unordered_map<std::string, Loaded> loaded_;
  std::unordered_set<std::string> asked_;
};

}  // namespace cubby
