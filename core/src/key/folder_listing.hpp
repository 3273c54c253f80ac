// The names of the folders a header scan looks candidates up in, listed once per folder state:
// most lookups of a name in a folder end without a stat.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>

namespace cubby {

// The names of one folder, for telling that a name is not there without a stat. A folder may be
// case-insensitive (vfat, SMB, ext4 casefold), so names are compared with ASCII case folded, and a
// folder with any non-ASCII name (which Unicode folding could match) may hold any name.
class NameSet {
 public:
  void add(std::string_view name) {
    std::string folded;
    if (!fold(name, folded)) ascii_ = false;
    names_.insert(std::move(folded));
  }
  bool empty() const { return names_.empty(); }
  // False only if no name of the folder can be `name`.
  bool may_contain(std::string_view name) const {
    std::string folded;
    return !ascii_ || !fold(name, folded) || names_.contains(folded);
  }

  // `name` with ASCII letters lowered into `out` (cleared first), as names are compared; false if
  // it has a non-ASCII byte (then any name of a folder could be it).
  static bool fold(std::string_view name, std::string& out) {
    out.clear();
    out.reserve(name.size());
    bool ascii = true;
    for (const char c : name) {
      ascii = ascii && static_cast<unsigned char>(c) < 0x80;
      out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
    return ascii;
  }

 private:
  std::unordered_set<std::string> names_;
  bool ascii_ = true;
};

// The names in folder `dir`, whose stat is `st` (a folder's); null if it cannot be listed whole.
// Memoized per process while the folder's identity, size, mtime and ctime are unchanged (adding,
// removing or renaming a name changes its mtime and ctime) and were older than the listing by
// ScanRecord::kTooNewNs (a name added within one time stamp granule after the listing may leave
// them as they were): no system call when nothing changed.
std::shared_ptr<const NameSet> listing_of(const std::string& dir, const struct stat& st);

// Forgets every memoized listing (tests, forget_header_scans).
void forget_folder_listings();

}  // namespace cubby
