// The archive of `cubby export` / `cubby import`: a POSIX ustar file (readable with `tar tf`)
// whose members are the store's entry files, named entries/<2 hex>/<32 hex>.entry.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <ostream>
#include <string>
#include <string_view>

namespace cubby::cli {

// Appends one regular-file member; false if the name does not fit (over 99 bytes) or the stream
// failed.
bool write_tar_member(std::ostream& out, std::string_view name, std::string_view bytes,
                      std::int64_t mtime);
// Writes the end-of-archive marker (two zero blocks).
bool write_tar_end(std::ostream& out);

// Reads members until the end marker, calling `visit(name, bytes)` for each regular file (other
// member types are skipped). Returns an empty string, or what is wrong with the archive (bad
// header checksum, truncation, a member over `max_member` bytes); members before the defect
// have been visited.
std::string read_tar(std::istream& in, std::uint64_t max_member,
                     const std::function<void(const std::string&, std::string&&)>& visit);

}  // namespace cubby::cli
