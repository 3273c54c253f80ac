// Folder listings for the header scan; contract in folder_listing.hpp.
#include "key/folder_listing.hpp"

#include <filesystem>
#include <mutex>
#include <utility>

#include "key/file_scans.hpp"
#include "key/file_system_trust.hpp"
#include "key/scan_record.hpp"

namespace cubby {
namespace {

struct Listing {
  struct stat st {};
  std::shared_ptr<const NameSet> names;
};
}  // namespace

std::shared_ptr<const NameSet> listing_of(const std::string& dir, const struct stat& st) {
  auto& [mutex, known] = memo_table<Listing>();
  {
    const std::lock_guard lock(mutex);
    if (auto found = known.find(dir);
        found != known.end() && FileScan::same_state(found->second.st, st)) {
      return found->second.names;
    }
  }
  const std::int64_t listed_ns = realtime_ns();
  auto names = std::make_shared<NameSet>();
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names->add(it->path().filename().string());
  }
  if (ec) return nullptr;
  struct stat after {};
  std::shared_ptr<const NameSet> result = std::move(names);
  if (::stat(dir.c_str(), &after) != 0 || !FileScan::same_state(st, after)) return nullptr;
  if (FileScan::changed_before(st, listed_ns - ScanRecord::kTooNewNs) &&
      device_trusted(dir, st.st_dev)) {  // file_system_trust.hpp
    const std::lock_guard lock(mutex);
    known[dir] = Listing{st, result};
  }
  return result;
}

void forget_folder_listings() {
  auto& listings = memo_table<Listing>();
  const std::lock_guard lock(listings.mutex);
  listings.known.clear();
}

}  // namespace cubby
