#include "storage/local/pch_policy.hpp"

#include <cstdio>
#include <string>

#include "storage/local/pch_dir.hpp"
#include "util/bytes.hpp"
#include "util/hash.hpp"

namespace cubby {

PchPolicy::PchPolicy(const Config& config)
    : root_(config.dir),
      enabled_(config.pch && !config.read_only && !config.disabled),
      eager_(config.pch_eager) {}

PchPolicy::~PchPolicy() = default;

std::filesystem::path PchPolicy::folder_for(const CompileRequest& request,
                                            const KeyInputs& inputs) {
  if (!enabled_ || off_) return {};
  if (!inputs.unresolvable.empty()) return {};  // headers the scan cannot name: no fingerprint
  std::call_once(once_, [&] { dir_ = PchDir::of_store(root_); });
  if (!dir_) return {};
  std::string fingerprint = request.arch;
  for (const std::string& option : request.options) fingerprint += '\0' + option;
  for (const HeaderDigest& header : inputs.headers) {
    fingerprint += '\1' + header.include + '\0' + header.path + '\0';
    fingerprint.append(reinterpret_cast<const char*>(header.content_hash.data()),
                       header.content_hash.size());
  }
  const auto digest = hash128(fingerprint);
  bool made = false;
  std::filesystem::path folder = dir_->fingerprint_folder(to_hex(digest.data(), 8), made);
  if (made && !eager_) return {};
  return folder;  // empty when the folder is not safe to use (pch_dir.hpp)
}

void PchPolicy::note(const PchOutcome& outcome) {
  if (outcome.failed && !off_.exchange(true)) {
    std::fprintf(stderr,
                 "cubby: NVRTC could not use precompiled headers (%s); compiling without PCH from "
                 "now on in this process (CUBBY_PCH=0 turns it off)\n",
                 outcome.why.c_str());
  }
}

void PchPolicy::discard(const std::filesystem::path& folder) {
  if (!folder.empty() && dir_) dir_->discard(folder.filename().string());
}

}  // namespace cubby
