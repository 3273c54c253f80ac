// The CUDA driver, loaded lazily (dlopen "libcuda.so.1"): linking it would break every machine
// without a GPU. Module load, lookup by name expression, and the few memory and launch helpers
// tests need. Everything here throws cubby::Error (public boundary) unless it returns a Result.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/error.hpp"
#include "cubby/export.h"
#include "cubby/types.hpp"

namespace cubby {

// Whether a GPU can be used: ok, or driver_unavailable / no_gpu / cuda_error with a message
// saying why (for GTEST_SKIP and `cubby` diagnostics). Loads the driver on first call; cheap after.
CUBBY_API Result<void> gpu_status();

// "sm_90" for the current context's device (or device 0). Requires a GPU.
CUBBY_API Result<std::string> gpu_arch();

// Makes the primary context of device 0 current on this thread if none is. Requires a GPU.
CUBBY_API Result<void> ensure_context();

// A device variable found by name expression.
struct DeviceVariable {
  CUdeviceptr pointer = 0;
  std::size_t bytes = 0;
};

// A loaded module (CUBIN or PTX) in the current context, unloaded on destruction. Kernels and
// variables are looked up by the name expressions the entry was compiled with.
class CUBBY_API Module {
 public:
  // Loads `entry`'s payload with cuModuleLoadData into the current context (made current first
  // if needed). Throws cubby::Error (driver_unavailable, no_gpu, cuda_error).
  explicit Module(std::shared_ptr<const Entry> entry);
  ~Module();
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The kernel for a name expression given at compile time ("ns::k<float, 3>").
  // Throws name_not_found for an expression the entry does not know, cuda_error otherwise.
  CUfunction function(std::string_view name_expression) const;

  // A `__device__` variable by name expression ("&ns::table<double>"); the leading '&' is optional.
  DeviceVariable variable(std::string_view name_expression) const;

  // The mangled names of every kernel of the module, sorted (see enumerate_kernels below).
  std::vector<std::string> enumerate_kernels() const;

  CUmodule native() const { return module_; }
  const Entry& entry() const { return *entry_; }

 private:
  std::shared_ptr<const Entry> entry_;
  CUmodule module_ = nullptr;
};

// The mangled names of every kernel of a loaded module, sorted, through cuModuleGetFunctionCount,
// cuModuleEnumerateFunctions and cuFuncGetName (drivers of CUDA 12.4 and later; otherwise
// driver_unavailable saying so). Variables are not listed: the driver cannot enumerate them
// (read_cubin_symbols can). Requires a GPU.
CUBBY_API Result<std::vector<std::string>> enumerate_kernels(CUmodule module);

// Grid and block sizes (cuda.h has no dim3).
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// Launches `kernel` with cuLaunchKernel on the default stream and waits for it to finish.
// `args` as for cuLaunchKernel (an array of pointers to each argument).
CUBBY_API void launch(CUfunction kernel, Dim3 grid, Dim3 block, void** args,
                      unsigned shared_bytes = 0);

// Minimal device memory helpers (throw cubby::Error on failure).
CUBBY_API CUdeviceptr device_alloc(std::size_t bytes);
CUBBY_API void device_free(CUdeviceptr pointer) noexcept;
CUBBY_API void copy_to_device(CUdeviceptr destination, const void* source, std::size_t bytes);
CUBBY_API void copy_to_host(void* destination, CUdeviceptr source, std::size_t bytes);

// RAII device buffer.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : pointer_(device_alloc(bytes)), bytes_(bytes) {}
  ~DeviceBuffer() { device_free(pointer_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  CUdeviceptr get() const { return pointer_; }
  std::size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr pointer_;
  std::size_t bytes_;
};

}  // namespace cubby
