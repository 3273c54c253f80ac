// Demangling of Itanium C++ symbol names: the C++ runtime's abi::__cxa_demangle, and the CUDA
// toolkit's own demangler (__cu_demangle from libcufilt, nv_decode.h) when libcubby was built
// with it (the toolkit ships it as the static library libcufilt.a).
#pragma once

#include <string>
#include <string_view>

#include "cubby/error.hpp"
#include "cubby/export.h"

namespace cubby {

enum class Demangler {
  cxa,     // abi::__cxa_demangle (always available)
  cufilt,  // __cu_demangle from the toolkit's libcufilt (see cufilt_available())
};

// "cxa", "cufilt".
CUBBY_API const char* demangler_name(Demangler demangler) noexcept;

// True when libcubby was linked with the toolkit's libcufilt at configure time.
CUBBY_API bool cufilt_available() noexcept;

// The demangled text of `mangled` ("_ZN2ns1kIfEEvPT_" -> "void ns::k<float>(float*)").
// A name that is not mangled (no "_Z" prefix: extern "C" kernels) is returned unchanged.
// Errc::invalid_argument naming the symbol when the demangler rejects it (or when the
// requested demangler is not available, saying how to get it). Thread-safe; never throws.
CUBBY_API Result<std::string> demangle(std::string_view mangled,
                                       Demangler demangler = Demangler::cxa);

}  // namespace cubby
