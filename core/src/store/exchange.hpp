// Export and import: what leaves a store for an archive (`cubby export`) and what an archive's
// members do to a store (`cubby import`). The container (ustar, gzip) is the caller's; here are
// the members: entries/<2 hex>/<32 hex>.entry (an entry file as stored) and
// manifests/<stem>.manifest (a suite's recipes, store/suites.hpp).
//
// Nothing unverified crosses: export leaves out entries that are unreadable or fail verify_entry
// (entries of another format version go as they are: another release verifies them), and import
// verifies each entry against the key it is named after before it is published; entries of
// another format version are counted and left out, never imported unverified.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/error.hpp"
#include "store/store.hpp"

namespace cubby {

// One member of an export, in the order export_store hands them over.
struct ExportMember {
  enum class Kind { entry, manifest };
  Kind kind = Kind::entry;
  std::string name;        // its path in the archive
  std::string bytes;       // the file's bytes
  std::int64_t mtime = 0;  // Unix seconds: the entry's last use (0 for a manifest)
};

// Calls `member` for every good entry of `store` (key order), then for every suite's manifest,
// until it returns false (the caller could not write it). `skipped(message)` is called for each
// entry left out, the message saying which and why (and what removes it). Errc::io when the store
// cannot be listed.
Result<void> export_store(const Store& store,
                          const std::function<bool(const ExportMember&)>& member,
                          const std::function<void(const std::string&)>& skipped);

// A member import_member rejected: the entry's key or the member's name, and why.
struct ImportProblem {
  std::string key;     // an entry's key (hex); empty for a manifest
  std::string member;  // a manifest member's name; empty for an entry
  std::string problem;
};

// What an import did: counts per outcome, the rejected members' problems, the first write error
// (after it, members are only counted).
struct ImportTally {
  std::uint64_t imported = 0;
  std::uint64_t present = 0;  // entries the store holds already: kept
  std::uint64_t rejected = 0;
  std::uint64_t foreign = 0;  // members that are no entry file nor manifest (other names, links)
  std::uint64_t other_format = 0;
  std::uint64_t bytes = 0;  // of the imported entries
  std::uint64_t manifests = 0;
  std::vector<ImportProblem> problems;
  std::string write_error;
};

// Imports one archive member into `store`: an entry (<32 hex>.entry in any folder, a regular file)
// verified and written unless present; a suite manifest (manifests/*.manifest) merged into the
// store's (the recipes the store knows first); anything else counted foreign. The outcome is
// added to `tally`.
void import_member(Store& store, std::string_view name, bool regular, const std::string& bytes,
                   ImportTally& tally);

// After the last member: adds the imported entries to the store's size estimate.
void finish_import(Store& store, const ImportTally& tally);

}  // namespace cubby
