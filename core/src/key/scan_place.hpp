// Where header scans keep what they learn between processes: one store's tmp/ folder, owned by
// the Cache of that store (two Caches on two stores in one process never share one).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "key/scan_book.hpp"
#include "key/scan_record.hpp"

namespace cubby {

// What a place keeps (include_scan.hpp's scan_includes reads and writes them):
// - the toolkit part: the names the toolkit headers reached from one header include
//   (toolkit_names.hpp), written once, read by every later process;
// - the scan record (scan_record.hpp): each user header's content hash and includes by canonical
//   path and state, so a later process stats a header instead of reading and lexing it;
// - the scan book (scan_book.hpp): whole scans with what they looked at, so a later process
//   checks an include set's scan with a stat per file and folder instead of walking it.
// A place without a folder keeps nothing (every process reads its headers and walks its include
// sets once). `too_new_ns`: the "too new" window of the record and the book (ScanRecord). A file
// that cannot be written or read costs time only. Thread-safe; not copyable (the record is one
// table per place).
class ScanPlace {
 public:
  // A place that keeps nothing.
  ScanPlace() = default;
  explicit ScanPlace(const std::filesystem::path& folder,
                     std::int64_t too_new_ns = ScanRecord::kTooNewNs)
      : folder_(folder), too_new_ns_(too_new_ns) {
    if (folder.empty()) return;
    record_ = std::make_unique<ScanRecord>(scan_record_file(folder), too_new_ns);
    book_ = std::make_unique<ScanBook>(folder);
  }
  ScanPlace(const ScanPlace&) = delete;
  ScanPlace& operator=(const ScanPlace&) = delete;

  // The place of scans whose caller names none: nothing is kept.
  static const ScanPlace& none() {
    static const auto* instance = new ScanPlace();  // never destroyed: usable at exit
    return *instance;
  }

  const std::filesystem::path& folder() const { return folder_; }
  std::int64_t too_new_ns() const { return too_new_ns_; }
  ScanRecord* record() const { return record_.get(); }  // null: none
  const ScanBook* book() const { return book_.get(); }  // null: none

 private:
  std::filesystem::path folder_;
  std::int64_t too_new_ns_ = ScanRecord::kTooNewNs;
  std::unique_ptr<ScanRecord> record_;
  std::unique_ptr<ScanBook> book_;
};

}  // namespace cubby
