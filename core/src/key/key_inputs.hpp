// The request -> KeyInputs policy: which facts of a compile request, of the NVRTC library and of
// the headers it can read enter its key.
#pragma once

#include <filesystem>
#include <string>

#include "cubby/key.hpp"
#include "cubby/nvrtc.hpp"

namespace cubby {

// The key inputs of `request` compiled for `arch` (resolved: not empty) by `nvrtc`: the entry
// format version, NVRTC's version and identity, arch, options, source, program name, name
// expressions, and the headers the request can read under the include plan compile follows
// (plan_includes: one reading of the options, NVRTC's search order; toolkit folders are covered
// by the identity). With a non-empty `base_dir` (CUBBY_BASE_DIR), paths under it enter relative
// to it (relativize_paths). Reads headers (memoized scan); no NVRTC call.
KeyInputs key_inputs_for(const CompileRequest& request, const std::string& arch,
                         const NvrtcLibrary& nvrtc, const std::filesystem::path& base_dir);

}  // namespace cubby
