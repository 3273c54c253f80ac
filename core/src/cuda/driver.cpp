// The CUDA driver, loaded lazily with dlopen (see driver.hpp).
#include "cubby/driver.hpp"

#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cubby {
namespace {

// Driver entry points cubby calls. Each is typed by the cudaTypedefs.h typedef of one ABI
// version and resolved for exactly that version: cuGetProcAddress with CUDA_VERSION would hand
// out newer ABIs (CUDA 13's cuCtxSynchronize takes a context), so the version is pinned per call.
struct DriverApi {
  PFN_cuInit_v2000 init = nullptr;
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDeviceGetCount_v2000 device_get_count = nullptr;
  PFN_cuDeviceGetAttribute_v2000 device_get_attribute = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 primary_ctx_retain = nullptr;
  PFN_cuCtxGetCurrent_v4000 ctx_get_current = nullptr;
  PFN_cuCtxSetCurrent_v4000 ctx_set_current = nullptr;
  PFN_cuCtxGetDevice_v2000 ctx_get_device = nullptr;
  PFN_cuCtxSynchronize_v2000 ctx_synchronize = nullptr;
  PFN_cuModuleLoadData_v2000 module_load_data = nullptr;
  PFN_cuModuleUnload_v2000 module_unload = nullptr;
  PFN_cuModuleGetFunction_v2000 module_get_function = nullptr;
  PFN_cuModuleGetGlobal_v3020 module_get_global = nullptr;
  PFN_cuLaunchKernel_v4000 launch_kernel = nullptr;
  PFN_cuMemAlloc_v3020 mem_alloc = nullptr;
  PFN_cuMemFree_v3020 mem_free = nullptr;
  PFN_cuMemcpyHtoD_v3020 memcpy_htod = nullptr;
  PFN_cuMemcpyDtoH_v3020 memcpy_dtoh = nullptr;
  PFN_cuGetErrorName_v6000 get_error_name = nullptr;
  PFN_cuGetErrorString_v6000 get_error_string = nullptr;
  // Optional (drivers of CUDA 12.4 and later): module enumeration.
  PFN_cuModuleGetFunctionCount_v12040 module_get_function_count = nullptr;
  PFN_cuModuleEnumerateFunctions_v12040 module_enumerate_functions = nullptr;
  PFN_cuFuncGetName_v12030 func_get_name = nullptr;
};

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

// The loaded driver, or why it could not be loaded. Built once, never unloaded.
struct Driver {
  DriverApi api;
  bool loaded = false;
  Failure failure{Errc::driver_unavailable, {}};
};

constexpr const char* kLibraryName = "libcuda.so.1";

// Resolves `base` (the unversioned driver name, e.g. "cuMemAlloc") as it was in CUDA `version`
// through cuGetProcAddress (legacy default stream), else with dlsym of `exported`, the library's
// name for that same ABI (e.g. "cuMemAlloc_v2").
template <class Fn>
bool resolve(void* handle, GetProcAddress get_proc, Fn& target, const char* base, int version,
             const char* exported) {
  void* symbol = nullptr;
  if (get_proc != nullptr) {
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (get_proc(base, &symbol, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) !=
            CUDA_SUCCESS ||
        status != CU_GET_PROC_ADDRESS_SUCCESS) {
      symbol = nullptr;
    }
  }
  if (symbol == nullptr) symbol = dlsym(handle, exported);
  if (symbol == nullptr) return false;
  target = reinterpret_cast<Fn>(symbol);
  return true;
}

Driver load_driver() {
  Driver driver;
  dlerror();
  void* handle = dlopen(kLibraryName, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    driver.failure = fail(Errc::driver_unavailable, kLibraryName, " could not be loaded (",
                          why != nullptr ? why : "unknown reason",
                          "): no NVIDIA driver on this machine; GPU tests skip, compile-only "
                          "work still runs");
    return driver;
  }
  GetProcAddress get_proc = nullptr;
  if (void* symbol = dlsym(handle, "cuGetProcAddress_v2"); symbol != nullptr) {
    get_proc = reinterpret_cast<GetProcAddress>(symbol);
  }
  DriverApi& api = driver.api;
  std::string missing;
  auto need = [&](auto& target, const char* base, int version, const char* exported) {
    if (!resolve(handle, get_proc, target, base, version, exported)) {
      missing.append(missing.empty() ? "" : ", ").append(exported);
    }
  };
  need(api.init, "cuInit", 2000, "cuInit");
  need(api.device_get, "cuDeviceGet", 2000, "cuDeviceGet");
  need(api.device_get_count, "cuDeviceGetCount", 2000, "cuDeviceGetCount");
  need(api.device_get_attribute, "cuDeviceGetAttribute", 2000, "cuDeviceGetAttribute");
  need(api.primary_ctx_retain, "cuDevicePrimaryCtxRetain", 7000, "cuDevicePrimaryCtxRetain");
  need(api.ctx_get_current, "cuCtxGetCurrent", 4000, "cuCtxGetCurrent");
  need(api.ctx_set_current, "cuCtxSetCurrent", 4000, "cuCtxSetCurrent");
  need(api.ctx_get_device, "cuCtxGetDevice", 2000, "cuCtxGetDevice");
  need(api.ctx_synchronize, "cuCtxSynchronize", 2000, "cuCtxSynchronize");
  need(api.module_load_data, "cuModuleLoadData", 2000, "cuModuleLoadData");
  need(api.module_unload, "cuModuleUnload", 2000, "cuModuleUnload");
  need(api.module_get_function, "cuModuleGetFunction", 2000, "cuModuleGetFunction");
  need(api.module_get_global, "cuModuleGetGlobal", 3020, "cuModuleGetGlobal_v2");
  need(api.launch_kernel, "cuLaunchKernel", 4000, "cuLaunchKernel");
  need(api.mem_alloc, "cuMemAlloc", 3020, "cuMemAlloc_v2");
  need(api.mem_free, "cuMemFree", 3020, "cuMemFree_v2");
  need(api.memcpy_htod, "cuMemcpyHtoD", 3020, "cuMemcpyHtoD_v2");
  need(api.memcpy_dtoh, "cuMemcpyDtoH", 3020, "cuMemcpyDtoH_v2");
  need(api.get_error_name, "cuGetErrorName", 6000, "cuGetErrorName");
  need(api.get_error_string, "cuGetErrorString", 6000, "cuGetErrorString");
  resolve(handle, get_proc, api.module_get_function_count, "cuModuleGetFunctionCount", 12040,
          "cuModuleGetFunctionCount");
  resolve(handle, get_proc, api.module_enumerate_functions, "cuModuleEnumerateFunctions", 12040,
          "cuModuleEnumerateFunctions");
  resolve(handle, get_proc, api.func_get_name, "cuFuncGetName", 12030, "cuFuncGetName");
  if (!missing.empty()) {
    driver.failure = fail(
        Errc::driver_unavailable, kLibraryName, " was loaded but lacks entry points (", missing,
        "): the NVIDIA driver is too old or broken; install a driver that "
        "supports CUDA ",
        std::to_string(CUDA_VERSION / 1000), ".", std::to_string(CUDA_VERSION % 1000 / 10));
    return driver;  // the handle stays open: unloading a driver library is not safe
  }
  driver.loaded = true;
  return driver;
}

// The process-wide driver; loaded on first use (thread-safe static initialization).
const Driver& driver() {
  static const Driver instance = load_driver();
  return instance;
}

const DriverApi& api() { return driver().api; }

// "CUDA_ERROR_X (description)" for a driver result.
std::string describe(CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api().get_error_name == nullptr || api().get_error_name(result, &name) != CUDA_SUCCESS ||
      name == nullptr) {
    name = "unknown CUDA error";
  }
  if (api().get_error_string == nullptr || api().get_error_string(result, &text) != CUDA_SUCCESS ||
      text == nullptr) {
    text = "no description";
  }
  return std::string(name) + " (" + text + ", code " + std::to_string(static_cast<int>(result)) +
         ")";
}

Failure cuda_failure(const char* call, CUresult result, std::string_view hint = {}) {
  Failure failure = fail(Errc::cuda_error, call, " failed: ", describe(result));
  if (!hint.empty()) failure.message.append("; ").append(hint);
  return failure;
}

Result<void> compute_status() {
  const Driver& loaded = driver();
  if (!loaded.loaded) return loaded.failure;
  if (CUresult result = loaded.api.init(0); result != CUDA_SUCCESS) {
    return fail(Errc::no_gpu, "cuInit failed: ", describe(result),
                "; check that the NVIDIA driver is loaded and a GPU is visible "
                "(nvidia-smi, CUDA_VISIBLE_DEVICES)");
  }
  int count = 0;
  if (CUresult result = loaded.api.device_get_count(&count); result != CUDA_SUCCESS) {
    return fail(Errc::no_gpu, "cuDeviceGetCount failed: ", describe(result),
                "; check that a GPU is visible (nvidia-smi, CUDA_VISIBLE_DEVICES)");
  }
  if (count <= 0) {
    return fail(Errc::no_gpu,
                "no CUDA device: the driver loaded but reports no GPU; check "
                "CUDA_VISIBLE_DEVICES and nvidia-smi");
  }
  return {};
}

void check(const char* call, CUresult result, std::string_view hint = {}) {
  if (result != CUDA_SUCCESS) throw Error(cuda_failure(call, result, hint));
}

void require_context() {
  Result<void> context = ensure_context();
  if (!context.ok()) throw Error(context.error());
}

// The lowered name of `expression` in `entry`, or name_not_found naming a few known expressions.
Failure unknown_expression(const Entry& entry, std::string_view expression, const char* what) {
  std::string known;
  std::size_t shown = 0;
  for (const auto& [name, lowered] : entry.lowered_names) {
    if (shown == 5) {
      known.append(", ...");
      break;
    }
    known.append(shown == 0 ? "" : ", ").append("\"").append(name).append("\"");
    ++shown;
  }
  if (known.empty()) known = "none";
  return fail(Errc::name_not_found, "no ", what, " for name expression \"", expression,
              "\" in this entry (", std::to_string(entry.lowered_names.size()), " known: ", known,
              "); pass the expression exactly as it was given to the compile");
}

}  // namespace

Result<void> gpu_status() {
  static const Result<void> status = compute_status();
  return status;
}

Result<std::string> gpu_arch() {
  if (Result<void> status = gpu_status(); !status.ok()) return status.error();
  const DriverApi& cu = api();
  CUcontext context = nullptr;
  CUdevice device = 0;
  if (cu.ctx_get_current(&context) == CUDA_SUCCESS && context != nullptr) {
    if (CUresult result = cu.ctx_get_device(&device); result != CUDA_SUCCESS) {
      return cuda_failure("cuCtxGetDevice", result);
    }
  } else if (CUresult result = cu.device_get(&device, 0); result != CUDA_SUCCESS) {
    return cuda_failure("cuDeviceGet", result);
  }
  int major = 0;
  int minor = 0;
  if (CUresult result =
          cu.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
      result != CUDA_SUCCESS) {
    return cuda_failure("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)", result);
  }
  if (CUresult result =
          cu.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
      result != CUDA_SUCCESS) {
    return cuda_failure("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)", result);
  }
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

Result<void> ensure_context() {
  if (Result<void> status = gpu_status(); !status.ok()) return status;
  const DriverApi& cu = api();
  CUcontext current = nullptr;
  if (CUresult result = cu.ctx_get_current(&current); result != CUDA_SUCCESS) {
    return cuda_failure("cuCtxGetCurrent", result);
  }
  if (current != nullptr) return {};
  // Device 0's primary context, retained once and kept for the life of the process.
  static std::mutex mutex;
  static CUcontext primary = nullptr;
  {
    std::lock_guard lock(mutex);
    if (primary == nullptr) {
      CUdevice device = 0;
      if (CUresult result = cu.device_get(&device, 0); result != CUDA_SUCCESS) {
        return cuda_failure("cuDeviceGet", result);
      }
      if (CUresult result = cu.primary_ctx_retain(&primary, device); result != CUDA_SUCCESS) {
        primary = nullptr;
        return cuda_failure("cuDevicePrimaryCtxRetain", result,
                            "the GPU may be out of memory or in exclusive-process mode");
      }
    }
    current = primary;
  }
  if (CUresult result = cu.ctx_set_current(current); result != CUDA_SUCCESS) {
    return cuda_failure("cuCtxSetCurrent", result);
  }
  return {};
}

Module::Module(std::shared_ptr<const Entry> entry) : entry_(std::move(entry)) {
  if (entry_ == nullptr) throw Error(Errc::invalid_argument, "Module needs an entry, got null");
  if (entry_->kind == PayloadKind::ltoir) {
    throw Error(Errc::invalid_argument,
                "LTO-IR must be linked with nvJitLink first; cuModuleLoadData cannot load it "
                "(compile for sm_XX without -dlto to get a CUBIN)");
  }
  if (entry_->payload.empty()) {
    throw Error(Errc::invalid_argument,
                "the entry's payload is empty; recompile it (cubby verify --fix removes bad "
                "entries)");
  }
  require_context();
  // std::string keeps a terminating NUL after its bytes, which PTX text needs.
  check("cuModuleLoadData", api().module_load_data(&module_, entry_->payload.data()),
        "the payload may target another GPU architecture than this device's; compile for "
        "gpu_arch()");
}

Module::~Module() {
  if (module_ != nullptr) static_cast<void>(api().module_unload(module_));
}

Module::Module(Module&& other) noexcept
    : entry_(std::move(other.entry_)), module_(std::exchange(other.module_, nullptr)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    if (module_ != nullptr) static_cast<void>(api().module_unload(module_));
    entry_ = std::move(other.entry_);
    module_ = std::exchange(other.module_, nullptr);
  }
  return *this;
}

CUfunction Module::function(std::string_view name_expression) const {
  if (module_ == nullptr || entry_ == nullptr) {
    throw Error(Errc::invalid_argument, "Module::function called on a moved-from Module");
  }
  const auto found = entry_->lowered_names.find(std::string(name_expression));
  if (found == entry_->lowered_names.end()) {
    throw Error(unknown_expression(*entry_, name_expression, "kernel"));
  }
  CUfunction kernel = nullptr;
  const CUresult result = api().module_get_function(&kernel, module_, found->second.c_str());
  if (result != CUDA_SUCCESS) {
    throw Error(fail(Errc::cuda_error, "cuModuleGetFunction(\"", found->second, "\") for \"",
                     name_expression, "\" failed: ", describe(result),
                     "; the expression may name a variable (use variable()) or the entry may "
                     "be corrupt (cubby verify --fix)"));
  }
  return kernel;
}

DeviceVariable Module::variable(std::string_view name_expression) const {
  if (module_ == nullptr || entry_ == nullptr) {
    throw Error(Errc::invalid_argument, "Module::variable called on a moved-from Module");
  }
  const auto& names = entry_->lowered_names;
  std::string expression(name_expression);
  auto found = names.find(expression);
  if (found == names.end()) {
    const std::string other = (!expression.empty() && expression.front() == '&')
                                  ? expression.substr(1)
                                  : "&" + expression;
    found = names.find(other);
  }
  if (found == names.end()) {
    throw Error(unknown_expression(*entry_, name_expression, "variable"));
  }
  DeviceVariable variable;
  const CUresult result =
      api().module_get_global(&variable.pointer, &variable.bytes, module_, found->second.c_str());
  if (result != CUDA_SUCCESS) {
    throw Error(fail(Errc::cuda_error, "cuModuleGetGlobal(\"", found->second, "\") for \"",
                     name_expression, "\" failed: ", describe(result),
                     "; the expression may name a kernel (use function()) or the entry may be "
                     "corrupt (cubby verify --fix)"));
  }
  return variable;
}

Result<std::vector<std::string>> enumerate_kernels(CUmodule module) {
  if (Result<void> status = gpu_status(); !status.ok()) return status.error();
  const DriverApi& cu = api();
  if (cu.module_get_function_count == nullptr || cu.module_enumerate_functions == nullptr ||
      cu.func_get_name == nullptr) {
    return fail(Errc::driver_unavailable,
                "this NVIDIA driver lacks cuModuleGetFunctionCount/cuModuleEnumerateFunctions/"
                "cuFuncGetName (CUDA 12.4 and later); update the driver, or enumerate the "
                "CUBIN's ELF symbol table instead (read_cubin_symbols)");
  }
  if (module == nullptr) return fail(Errc::invalid_argument, "enumerate_kernels needs a module");
  unsigned count = 0;
  if (CUresult result = cu.module_get_function_count(&count, module); result != CUDA_SUCCESS) {
    return cuda_failure("cuModuleGetFunctionCount", result);
  }
  std::vector<CUfunction> functions(count);
  if (count > 0) {
    if (CUresult result = cu.module_enumerate_functions(functions.data(), count, module);
        result != CUDA_SUCCESS) {
      return cuda_failure("cuModuleEnumerateFunctions", result);
    }
  }
  std::vector<std::string> names;
  names.reserve(count);
  for (CUfunction function : functions) {
    const char* name = nullptr;
    if (CUresult result = cu.func_get_name(&name, function); result != CUDA_SUCCESS) {
      return cuda_failure("cuFuncGetName", result);
    }
    if (name != nullptr && *name != '\0') names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::vector<std::string> Module::enumerate_kernels() const {
  if (module_ == nullptr) {
    throw Error(Errc::invalid_argument, "Module::enumerate_kernels called on a moved-from Module");
  }
  return cubby::enumerate_kernels(module_).value_or_throw();
}

void launch(CUfunction kernel, Dim3 grid, Dim3 block, void** args, unsigned shared_bytes) {
  if (kernel == nullptr) throw Error(Errc::invalid_argument, "launch needs a kernel, got null");
  require_context();
  const DriverApi& cu = api();
  check("cuLaunchKernel",
        cu.launch_kernel(kernel, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes,
                         nullptr, args, nullptr),
        "check the grid and block sizes and the kernel's arguments");
  check("cuCtxSynchronize", cu.ctx_synchronize(),
        "the kernel failed while running (out-of-bounds access, bad argument)");
}

CUdeviceptr device_alloc(std::size_t bytes) {
  if (bytes == 0)
    throw Error(Errc::invalid_argument, "device_alloc of 0 bytes; ask for at least 1");
  require_context();
  CUdeviceptr pointer = 0;
  check("cuMemAlloc", api().mem_alloc(&pointer, bytes), "the GPU may be out of memory");
  return pointer;
}

void device_free(CUdeviceptr pointer) noexcept {
  if (pointer == 0 || !driver().loaded) return;
  static_cast<void>(api().mem_free(pointer));
}

void copy_to_device(CUdeviceptr destination, const void* source, std::size_t bytes) {
  if (bytes == 0) return;
  require_context();
  check("cuMemcpyHtoD", api().memcpy_htod(destination, source, bytes),
        "check the destination pointer and size");
}

void copy_to_host(void* destination, CUdeviceptr source, std::size_t bytes) {
  if (bytes == 0) return;
  require_context();
  check("cuMemcpyDtoH", api().memcpy_dtoh(destination, source, bytes),
        "check the source pointer and size");
}

}  // namespace cubby
