#include "cache/key_inputs.hpp"

#include <utility>

#include "cubby/entry.hpp"
#include "key/include_scan.hpp"
#include "key/toolkit_headers.hpp"

namespace cubby {

namespace {

// The request's header scan under its include plan (paths not relativized), with
// the front-end options the plan cannot model counted as unresolvable.
HeaderScan scan_request(const CompileRequest& request, const IncludePlan& plan) {
  HeaderScan scan = scan_includes(request.source, plan.search);
  scan.unresolvable.insert(scan.unresolvable.end(), plan.unmodelled.begin(), plan.unmodelled.end());
  return scan;
}

KeyInputs inputs_of(const CompileRequest& request, const std::string& arch,
                    const NvrtcLibrary& nvrtc, const std::filesystem::path& base_dir,
                    HeaderScan scan) {
  KeyInputs inputs;
  inputs.format_version = kEntryFormatVersion;
  inputs.nvrtc_version = nvrtc.version;
  inputs.nvrtc_identity = nvrtc.identity;
  inputs.toolkit_headers = toolkit_headers_identity(nvrtc.include_dir);
  inputs.arch = arch;
  inputs.options = request.options;
  inputs.source = request.source;
  inputs.program_name = request.program_name;
  inputs.name_expressions = request.name_expressions;
  inputs.headers = std::move(scan.headers);
  inputs.unresolvable = std::move(scan.unresolvable);
  if (!base_dir.empty()) relativize_paths(inputs, base_dir);
  return inputs;
}

}  // namespace

KeyInputs key_inputs_for(const CompileRequest& request, const IncludePlan& plan,
                         const std::string& arch, const NvrtcLibrary& nvrtc,
                         const std::filesystem::path& base_dir) {
  return inputs_of(request, arch, nvrtc, base_dir, scan_request(request, plan));
}

bool headers_changed_since(const CompileRequest& request, const IncludePlan& plan,
                           const std::string& arch, const NvrtcLibrary& nvrtc,
                           const std::filesystem::path& base_dir, const KeyInputs& inputs,
                           std::int64_t since_ns) {
  if (!plan_still_current(plan, request)) return true;
  HeaderScan scan = scan_request(request, plan);
  for (const HeaderDigest& header : scan.headers) {
    if (header.resolved && header_changed_since(header.path, header.content_hash, since_ns)) {
      return true;
    }
  }
  return derive_key(inputs_of(request, arch, nvrtc, base_dir, std::move(scan))) !=
         derive_key(inputs);
}

}  // namespace cubby
