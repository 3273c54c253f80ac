// The toolkit header folder's identity; contract in toolkit_headers.hpp.
#include "key/toolkit_headers.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <system_error>
#include <utility>
#include <vector>

#include "key/folder_walk.hpp"
#include "util/bytes.hpp"
#include "util/file_trust.hpp"
#include "util/hash.hpp"
#include "util/io.hpp"

namespace cubby {

namespace fs = std::filesystem;

namespace {

using Listing = std::vector<std::pair<std::string, std::uintmax_t>>;

}  // namespace

std::string toolkit_headers_identity_uncached(const fs::path& include_dir) {
  if (include_dir.empty()) return {};
  std::error_code ec;
  if (!fs::is_directory(include_dir, ec)) return "missing";
  Listing files;
  const bool listed =
      walk_regular_files(include_dir.string(),
                         [&](const std::string&, const std::string& path, const struct stat& st) {
                           files.emplace_back(path, static_cast<std::uintmax_t>(st.st_size));
                           return true;
                         });
  if (!listed) return "missing";
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

fs::path toolkit_names_file(const fs::path& folder, std::string_view digest_hex) {
  return folder / ("toolkit-names-" + std::string(digest_hex) + "-" + std::to_string(::geteuid()));
}

std::optional<std::string> read_toolkit_names(const fs::path& file) {
  constexpr std::uint64_t kMaxBytes = 16 << 20;
  auto text = io::read_own_file(file, kMaxBytes);
  if (!text) return std::nullopt;
  return std::move(text).value();
}

void write_toolkit_names(const fs::path& file, std::string_view text) {
  (void)io::write_file_atomic(file, text, io::FileMode::owner_writable);
}

}  // namespace cubby
