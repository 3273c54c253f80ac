// The toolkit header folder's identity; contract in toolkit_headers.hpp.
#include "key/toolkit_headers.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <system_error>
#include <utility>
#include <vector>

#include "util/bytes.hpp"
#include "util/hash.hpp"

namespace cubby {

namespace fs = std::filesystem;

std::string toolkit_headers_identity_uncached(const fs::path& include_dir) {
  if (include_dir.empty()) return {};
  std::error_code ec;
  fs::recursive_directory_iterator it(include_dir, fs::directory_options::skip_permission_denied,
                                      ec);
  if (ec) return "missing";
  std::vector<std::pair<std::string, std::uintmax_t>> files;
  for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) return "missing";
    std::error_code file_ec;
    if (!it->is_regular_file(file_ec)) continue;
    const std::uintmax_t size = it->file_size(file_ec);
    if (file_ec) continue;
    files.emplace_back(it->path().lexically_relative(include_dir).string(), size);
  }
  std::sort(files.begin(), files.end());
  std::string listing;
  for (const auto& [path, size] : files) {
    listing += path;
    listing += '\0';
    listing += std::to_string(size);
    listing += '\n';
  }
  const auto digest = hash128(listing);
  return std::to_string(files.size()) + ";" + to_hex(digest.data(), digest.size());
}

std::string toolkit_headers_identity(const fs::path& include_dir) {
  static std::mutex mutex;
  static auto* known = new std::map<fs::path, std::string>();  // never destroyed: used at exit
  const std::lock_guard lock(mutex);
  auto [found, inserted] = known->try_emplace(include_dir);
  if (inserted) found->second = toolkit_headers_identity_uncached(include_dir);
  return found->second;
}

}  // namespace cubby
