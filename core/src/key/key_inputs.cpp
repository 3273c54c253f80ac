#include "key/key_inputs.hpp"

#include <utility>

#include "cubby/entry.hpp"
#include "key/include_plan.hpp"
#include "key/include_scan.hpp"

namespace cubby {

KeyInputs key_inputs_for(const CompileRequest& request, const std::string& arch,
                         const NvrtcLibrary& nvrtc, const std::filesystem::path& base_dir) {
  KeyInputs inputs;
  inputs.format_version = kEntryFormatVersion;
  inputs.nvrtc_version = nvrtc.version;
  inputs.nvrtc_identity = nvrtc.identity;
  inputs.arch = arch;
  inputs.options = request.options;
  inputs.source = request.source;
  inputs.program_name = request.program_name;
  inputs.name_expressions = request.name_expressions;
  HeaderScan scan = scan_includes(request.source, plan_includes(request, nvrtc.include_dir).search);
  inputs.headers = std::move(scan.headers);
  inputs.unresolvable = std::move(scan.unresolvable);
  if (!base_dir.empty()) relativize_paths(inputs, base_dir);
  return inputs;
}

}  // namespace cubby
