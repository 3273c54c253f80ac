#include "cuda/nvrtc_library.hpp"

#include <filesystem>

#include "cubby/nvrtc.hpp"
#include "util/dynamic_library.hpp"

#ifndef CUBBY_NVRTC_MAJOR
#error "CUBBY_NVRTC_MAJOR must be defined by the build (the CUDA toolkit's major version)"
#endif

namespace fs = std::filesystem;

namespace cubby {

namespace {

constexpr int kNvrtcMajor = CUBBY_NVRTC_MAJOR;

Result<NvrtcApi> load_nvrtc() {
  auto library = locate_nvrtc();
  if (!library.ok()) return library.error();
  const fs::path& path = library->path;
  DynamicLibrary nvrtc(path.c_str());
  if (!nvrtc.loaded()) {
    return fail(
        Errc::nvrtc_unavailable, "cannot load ", path.string(), ": ", nvrtc.why(),
        ". Set CUBBY_NVRTC_LIBRARY to a working libnvrtc.so or CUDA_HOME to a CUDA toolkit.");
  }
  NvrtcApi api;
  nvrtc.need("nvrtcVersion", api.version_fn);
  nvrtc.need("nvrtcGetErrorString", api.error_string);
  nvrtc.need("nvrtcCreateProgram", api.create_program);
  nvrtc.need("nvrtcDestroyProgram", api.destroy_program);
  nvrtc.need("nvrtcAddNameExpression", api.add_name_expression);
  nvrtc.need("nvrtcCompileProgram", api.compile_program);
  nvrtc.need("nvrtcGetLoweredName", api.get_lowered_name);
  nvrtc.need("nvrtcGetProgramLogSize", api.get_log_size);
  nvrtc.need("nvrtcGetProgramLog", api.get_log);
  nvrtc.need("nvrtcGetCUBINSize", api.get_cubin_size);
  nvrtc.need("nvrtcGetCUBIN", api.get_cubin);
  nvrtc.need("nvrtcGetPTXSize", api.get_ptx_size);
  nvrtc.need("nvrtcGetPTX", api.get_ptx);
  nvrtc.need("nvrtcGetLTOIRSize", api.get_ltoir_size);
  nvrtc.need("nvrtcGetLTOIR", api.get_ltoir);
  nvrtc.resolve("nvrtcGetPCHCreateStatus", api.get_pch_create_status);
  nvrtc.resolve("nvrtcGetPCHHeapSizeRequired", api.get_pch_heap_size_required);
  nvrtc.resolve("nvrtcGetPCHHeapSize", api.get_pch_heap_size);
  nvrtc.resolve("nvrtcSetPCHHeapSize", api.set_pch_heap_size);
  if (const char* missing = nvrtc.missing()) {
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
