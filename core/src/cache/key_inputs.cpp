#include "cache/key_inputs.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cubby/entry.hpp"
#include "key/include_scan.hpp"
#include "key/toolkit_headers.hpp"

namespace cubby {

namespace {

// Everything but the headers.
KeyInputs inputs_without_headers(const CompileRequest& request, const std::string& arch,
                                 const NvrtcLibrary& nvrtc) {
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
  return inputs;
}

// `scan`'s headers with their paths relativized under `base_dir` (as relativize_paths does).
std::vector<HeaderDigest> relativized_headers(const HeaderScan& scan,
                                              const std::filesystem::path& base_dir) {
  KeyInputs paths;
  paths.headers = scan.headers;
  if (!base_dir.empty()) relativize_paths(paths, base_dir);
  return std::move(paths.headers);
}

// headers_digest of `scan`'s headers relativized under `base_dir`, memoized per process by the
// scan (a memoized scan is one immutable object while it is memoized) and the base folder.
HeadersDigest digest_of(const std::shared_ptr<const HeaderScan>& scan,
                        const std::filesystem::path& base_dir) {
  struct Known {
    std::weak_ptr<const HeaderScan> scan;  // the object the address was of: never a reused one
    std::string base;
    HeadersDigest digest{};
  };
  static std::mutex mutex;
  static auto* known = new std::unordered_map<const HeaderScan*, Known>();  // used at exit
  const std::string base = base_dir.string();
  {
    const std::lock_guard lock(mutex);
    if (auto at = known->find(scan.get());
        at != known->end() && at->second.scan.lock() == scan && at->second.base == base) {
      return at->second.digest;
    }
  }
  const HeadersDigest digest = headers_digest(relativized_headers(*scan, base_dir));
  const std::lock_guard lock(mutex);
  if (known->size() >= 4096) known->clear();  // as many as the memo of whole scans holds
  (*known)[scan.get()] = Known{scan, base, digest};
  return digest;
}

}  // namespace

KeyInputs PreparedKey::full() const {
  KeyInputs whole = inputs;
  whole.headers = relativized_headers(*scan, base_dir);
  return whole;
}

PreparedKey KeyDeriver::prepare(const CompileRequest& request, const IncludePlan& plan,
                                const std::string& arch, const NvrtcLibrary& nvrtc) const {
  PreparedKey prepared;
  prepared.scan = scan_includes_shared(request.source, plan.search, place_);
  prepared.inputs = inputs_without_headers(request, arch, nvrtc);
  prepared.inputs.unresolvable = prepared.scan->unresolvable;
  prepared.inputs.unresolvable.insert(prepared.inputs.unresolvable.end(), plan.unmodelled.begin(),
                                      plan.unmodelled.end());
  if (!base_dir_.empty()) relativize_paths(prepared.inputs, base_dir_);
  prepared.digest = digest_of(prepared.scan, base_dir_);
  prepared.base_dir = base_dir_;
  return prepared;
}

bool KeyDeriver::headers_changed_since(const CompileRequest& request, const IncludePlan& plan,
                                       const std::string& arch, const NvrtcLibrary& nvrtc,
                                       const KeyInputs& inputs, std::int64_t since_ns) const {
  if (!plan_still_current(plan, request)) return true;
  const PreparedKey now = prepare(request, plan, arch, nvrtc);
  for (const HeaderDigest& header : now.scan->headers) {  // real paths: not relativized
    if (header.resolved && header_changed_since(header.path, header.content_hash, since_ns)) {
      return true;
    }
  }
  return now.key() != derive_key(inputs);
}

}  // namespace cubby
