// A test seam of compile_nvrtc: a function it calls just before NVRTC compiles, after the cache
// derived the key, so that a test can edit a header at exactly that point (deterministically, not
// by timing luck).
#pragma once

#include <functional>

#include "cubby/nvrtc.hpp"

namespace cubby {

// Called by compile_nvrtc with the request just before nvrtcCompileProgram, from the compiling
// thread. Empty (the default): nothing is called. For tests only; not synchronised with compiles
// in flight: set it while none runs.
using CompileHook = std::function<void(const CompileRequest&)>;
void set_compile_hook_for_testing(CompileHook hook);

}  // namespace cubby
