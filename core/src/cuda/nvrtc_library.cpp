#include "cuda/nvrtc_library.hpp"

#include <dlfcn.h>

#include <filesystem>

#include "cubby/nvrtc.hpp"

#ifndef CUBBY_NVRTC_MAJOR
#error "CUBBY_NVRTC_MAJOR must be defined by the build (the CUDA toolkit's major version)"
#endif

namespace fs = std::filesystem;

namespace cubby {

namespace {

constexpr int kNvrtcMajor = CUBBY_NVRTC_MAJOR;

template <class Fn>
bool resolve(void* handle, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(handle, name));
  return out != nullptr;
}

Result<NvrtcApi> load_nvrtc() {
  auto library = locate_nvrtc();
  if (!library.ok()) return library.error();
  const fs::path& path = library->path;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return fail(
        Errc::nvrtc_unavailable, "cannot load ", path.string(), ": ",
        why == nullptr ? "unknown error" : why,
        ". Set CUBBY_NVRTC_LIBRARY to a working libnvrtc.so or CUDA_HOME to a CUDA toolkit.");
  }
  // The handle is never closed: NVRTC stays loaded for the life of the process.
  NvrtcApi api;
  const char* missing = nullptr;
  auto need = [&](const char* name, auto& fn) {
    if (missing == nullptr && !resolve(handle, name, fn)) missing = name;
  };
  need("nvrtcVersion", api.version_fn);
  need("nvrtcGetErrorString", api.error_string);
  need("nvrtcCreateProgram", api.create_program);
  need("nvrtcDestroyProgram", api.destroy_program);
  need("nvrtcAddNameExpression", api.add_name_expression);
  need("nvrtcCompileProgram", api.compile_program);
  need("nvrtcGetLoweredName", api.get_lowered_name);
  need("nvrtcGetProgramLogSize", api.get_log_size);
  need("nvrtcGetProgramLog", api.get_log);
  need("nvrtcGetCUBINSize", api.get_cubin_size);
  need("nvrtcGetCUBIN", api.get_cubin);
  need("nvrtcGetPTXSize", api.get_ptx_size);
  need("nvrtcGetPTX", api.get_ptx);
  need("nvrtcGetLTOIRSize", api.get_ltoir_size);
  need("nvrtcGetLTOIR", api.get_ltoir);
  resolve(handle, "nvrtcGetPCHCreateStatus", api.get_pch_create_status);
  resolve(handle, "nvrtcGetPCHHeapSizeRequired", api.get_pch_heap_size_required);
  resolve(handle, "nvrtcGetPCHHeapSize", api.get_pch_heap_size);
  resolve(handle, "nvrtcSetPCHHeapSize", api.set_pch_heap_size);
  if (missing != nullptr) {
    return fail(Errc::nvrtc_unavailable, path.string(), " has no ", missing,
                "; it is too old or not libnvrtc. Set CUBBY_NVRTC_LIBRARY to libnvrtc.so of CUDA ",
                std::to_string(kNvrtcMajor), " or newer.");
  }
  int major = 0;
  int minor = 0;
  if (api.version_fn(&major, &minor) != NVRTC_SUCCESS) {
    return fail(Errc::nvrtc_unavailable, path.string(),
                " failed nvrtcVersion; set CUBBY_NVRTC_LIBRARY ", "to a working libnvrtc.so.");
  }
  api.version = std::to_string(major) + "." + std::to_string(minor);
  return api;
}

}  // namespace

const Result<NvrtcApi>& nvrtc_api() {
  static const Result<NvrtcApi> api = load_nvrtc();
  return api;
}

Result<std::string> loaded_nvrtc_version() {
  const auto& api = nvrtc_api();
  if (!api.ok()) return api.error();
  return api->version;
}

}  // namespace cubby
