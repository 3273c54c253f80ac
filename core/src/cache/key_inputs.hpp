// The request -> KeyInputs policy: which facts of a compile request, of the NVRTC library and of
// the headers it can read enter its key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "cubby/key.hpp"
#include "cubby/nvrtc.hpp"
#include "cuda/include_plan.hpp"
#include "key/include_scan.hpp"
#include "key/scan_record.hpp"  // realtime_ns(): the `since_ns` below

namespace cubby {

// The key inputs of `request` compiled for `arch` (resolved: not empty) by `nvrtc`: the entry
// format version, NVRTC's version and identity, the toolkit headers' identity (memoized), arch,
// options, source, program name, name expressions, and the headers the request can read under
// `plan` (plan_includes(request, nvrtc.include_dir), made once for the request and handed to the
// compile too: one reading of the options, NVRTC's search order; toolkit folders are covered by
// the identity; the front-end options the plan cannot model are unresolvable). With a non-empty
// `base_dir` (CUBBY_BASE_DIR), paths under it enter relative to it (relativize_paths). Reads
// headers (memoized scan); no NVRTC call.
KeyInputs key_inputs_for(const CompileRequest& request, const IncludePlan& plan,
                         const std::string& arch, const NvrtcLibrary& nvrtc,
                         const std::filesystem::path& base_dir);

// A request's key, prepared as Cache::compile needs it on its hit path: `inputs` as key_inputs_for
// gives them but without their headers (empty), `scan` the header scan they come from (shared
// with the per-process memo: a hit copies no header), and `digest` the headers' digest
// (headers_digest of the headers relativized under the base folder, memoized per scan and base).
struct PreparedKey {
  KeyInputs inputs;  // headers empty; unresolvable: the scan's, then the plan's unmodelled options
  std::shared_ptr<const HeaderScan> scan;
  HeadersDigest digest{};
  std::filesystem::path base_dir;

  Key key() const { return derive_key(inputs, digest); }
  // The whole key inputs (what key_inputs_for returns): for a miss, a recipe, an explanation.
  KeyInputs full() const;
};

PreparedKey prepare_key(const CompileRequest& request, const IncludePlan& plan,
                        const std::string& arch, const NvrtcLibrary& nvrtc,
                        const std::filesystem::path& base_dir);

// Whether the headers that key_inputs_for(request, plan, arch, nvrtc, base_dir) recorded in
// `inputs` may have changed since `since_ns` (realtime_ns() taken before `inputs` were derived):
// the plan's program folder is no longer the one NVRTC searches (plan_still_current), the scan
// under `plan` now gives another key, or a resolved header's bytes differ or its ctime is after
// `since_ns` (header_changed_since). Called after NVRTC returns: NVRTC reads the headers after
// the key was derived, so an edit in between gives code that must not be stored under that key.
// Reads every resolved header (no memo).
bool headers_changed_since(const CompileRequest& request, const IncludePlan& plan,
                           const std::string& arch, const NvrtcLibrary& nvrtc,
                           const std::filesystem::path& base_dir, const KeyInputs& inputs,
                           std::int64_t since_ns);

}  // namespace cubby
