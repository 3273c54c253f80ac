#include "cache/entry_check.hpp"

#include <algorithm>

#include "storage/local/verify.hpp"

namespace cubby {

std::vector<std::string> distinct_names(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Result<void> validate_entry(const Entry& entry, const std::vector<std::string>& names) {
  if (entry.lowered_names.size() != names.size()) {
    return fail(Errc::corrupt, "entry holds ", std::to_string(entry.lowered_names.size()),
                " lowered names, the request has ", std::to_string(names.size()));
  }
  for (const std::string& name : names) {
    if (!entry.lowered_names.contains(name)) {
      return fail(Errc::corrupt, "entry has no lowered name for '", name, "'");
    }
  }
  // No name to look up (most of CuPy's kernels: a CCCL CUBIN has a thousand symbols and more):
  // the checksum has covered the payload; `cubby verify` still parses it.
  if (names.empty()) return {};
  return verify_entry_symbols(entry);
}

}  // namespace cubby
