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
#include "key/scan_place.hpp"
#include "key/scan_record.hpp"  // realtime_ns(): the `since_ns` below

namespace cubby {

// A request's key, prepared as Cache::compile needs it on its hit path: `inputs` as
// KeyDeriver::inputs gives them but without their headers (empty), `scan` the header scan they
// come from (shared with the per-process memo: a hit copies no header), and `digest` the headers'
// digest (headers_digest of the headers relativized under the base folder, memoized per scan and
// base).
struct PreparedKey {
  KeyInputs inputs;  // headers empty; unresolvable: the scan's, then the plan's unmodelled options
  std::shared_ptr<const HeaderScan> scan;
  HeadersDigest digest{};
  std::filesystem::path base_dir;

  Key key() const { return derive_key(inputs, digest); }
  // The whole key inputs (what KeyDeriver::inputs returns): for a miss, a recipe, an explanation.
  KeyInputs full() const;
};

// One Cache's key derivation, made with the Cache: the request -> KeyInputs policy under its base
// folder (CUBBY_BASE_DIR), with the place its header scans are kept in between processes
// (scan_place.hpp: the store's tmp/), so two Caches on two stores in one process never share a
// scan record or book. Thread-safe.
class KeyDeriver {
 public:
  // `scan_folder`: where scans are kept between processes (empty: nowhere). `too_new_ns`: the
  // scan record's and book's "too new" window (ScanRecord).
  explicit KeyDeriver(std::filesystem::path base_dir = {},
                      const std::filesystem::path& scan_folder = {},
                      std::int64_t too_new_ns = ScanRecord::kTooNewNs)
      : base_dir_(std::move(base_dir)), place_(scan_folder, too_new_ns) {}

  const std::filesystem::path& base_dir() const { return base_dir_; }
  const ScanPlace& scans() const { return place_; }

  // The key of `request` compiled for `arch` (resolved: not empty) by `nvrtc`, prepared: the
  // entry format version, NVRTC's version and identity, the toolkit headers' identity
  // (memoized), arch, options, source, program name, name expressions, and the headers the
  // request can read under `plan` (plan_includes(request, nvrtc.include_dir), made once for the
  // request and handed to the compile too: one reading of the options, NVRTC's search order;
  // toolkit folders are covered by the identity; the front-end options the plan cannot model are
  // unresolvable). With a base folder, paths under it enter relative to it (relativize_paths).
  // Reads headers (memoized scan); no NVRTC call.
  PreparedKey prepare(const CompileRequest& request, const IncludePlan& plan,
                      const std::string& arch, const NvrtcLibrary& nvrtc) const;

  // prepare(...).full().
  KeyInputs inputs(const CompileRequest& request, const IncludePlan& plan, const std::string& arch,
                   const NvrtcLibrary& nvrtc) const {
    return prepare(request, plan, arch, nvrtc).full();
  }

  // Whether the headers that inputs(request, plan, arch, nvrtc) recorded in `inputs` may have
  // changed since `since_ns` (realtime_ns() taken before `inputs` were derived): the plan's
  // program folder is no longer the one NVRTC searches (plan_still_current), the scan under
  // `plan` now gives another key, or a resolved header's bytes differ or its ctime is after
  // `since_ns` (header_changed_since). Called after NVRTC returns: NVRTC reads the headers after
  // the key was derived, so an edit in between gives code that must not be stored under that key.
  // Reads every resolved header (no memo).
  bool headers_changed_since(const CompileRequest& request, const IncludePlan& plan,
                             const std::string& arch, const NvrtcLibrary& nvrtc,
                             const KeyInputs& inputs, std::int64_t since_ns) const;

 private:
  std::filesystem::path base_dir_;
  ScanPlace place_;
};

}  // namespace cubby
