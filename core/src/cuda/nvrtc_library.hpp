// The NVRTC functions cubby calls, from the library locate_nvrtc found, loaded with dlopen on
// first use (libcubby never links NVRTC: keys and hits need no NVRTC).
#pragma once

#include <nvrtc.h>

#include <string>

#include "cubby/error.hpp"

namespace cubby {

struct NvrtcApi {
  std::string version;  // "major.minor" from nvrtcVersion
  decltype(&::nvrtcVersion) version_fn = nullptr;
  decltype(&::nvrtcGetErrorString) error_string = nullptr;
  decltype(&::nvrtcCreateProgram) create_program = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy_program = nullptr;
  decltype(&::nvrtcAddNameExpression) add_name_expression = nullptr;
  decltype(&::nvrtcCompileProgram) compile_program = nullptr;
  decltype(&::nvrtcGetLoweredName) get_lowered_name = nullptr;
  decltype(&::nvrtcGetProgramLogSize) get_log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) get_log = nullptr;
  decltype(&::nvrtcGetCUBINSize) get_cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) get_cubin = nullptr;
  decltype(&::nvrtcGetPTXSize) get_ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) get_ptx = nullptr;
  decltype(&::nvrtcGetLTOIRSize) get_ltoir_size = nullptr;
  decltype(&::nvrtcGetLTOIR) get_ltoir = nullptr;
  // Precompiled headers (NVRTC 12.8+); null in an older library (then cubby compiles without).
  decltype(&::nvrtcGetPCHCreateStatus) get_pch_create_status = nullptr;
  decltype(&::nvrtcGetPCHHeapSizeRequired) get_pch_heap_size_required = nullptr;
  decltype(&::nvrtcGetPCHHeapSize) get_pch_heap_size = nullptr;
  decltype(&::nvrtcSetPCHHeapSize) set_pch_heap_size = nullptr;

  bool supports_pch() const {
    return get_pch_create_status != nullptr && get_pch_heap_size_required != nullptr &&
           get_pch_heap_size != nullptr && set_pch_heap_size != nullptr;
  }

  std::string describe(nvrtcResult rc) const {
    const char* text = error_string(rc);
    return text == nullptr ? "NVRTC error " + std::to_string(static_cast<int>(rc))
                           : std::string(text);
  }
};

// The loaded NVRTC, loaded on first use (once per process; a failure is remembered too:
// nvrtc_unavailable with a message that says what to set). Thread-safe.
const Result<NvrtcApi>& nvrtc_api();

}  // namespace cubby
