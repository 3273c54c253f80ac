// compile_nvrtc with the request's include plan handed in: the form a caller that serves a
// request uses (the Cache), so that the plan its key was derived under is the one NVRTC follows,
// made once per request (include_plan.hpp). The public compile_nvrtc overloads (cubby/nvrtc.hpp)
// make the plan themselves and call this.
#pragma once

#include <filesystem>

#include "cubby/error.hpp"
#include "cubby/nvrtc.hpp"
#include "cubby/types.hpp"
#include "cuda/include_plan.hpp"

namespace cubby {

// compile_nvrtc(request, pch_dir, pch) (no PCH when `pch_dir` is empty) with `plan`, which must
// be plan_includes(request, <the located NVRTC's include folder>): NVRTC gets the PCH options,
// `plan.options`, then the architecture. `pch` is reset first.
Result<Entry> compile_nvrtc(const CompileRequest& request, const IncludePlan& plan,
                            const std::filesystem::path& pch_dir, PchOutcome& pch);

}  // namespace cubby
