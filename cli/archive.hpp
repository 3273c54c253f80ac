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

// One member of an archive, as read_tar hands it over.
struct TarMember {
  std::string name;
  char type = '0';    // ustar typeflag: '0' (or NUL) a regular file, '5' a folder, '1'/'2' a link
  std::string bytes;  // the content of a regular file (skipped, left empty, for other types)

  bool regular() const { return type == '0' || type == '\0'; }
};

// Reads members until the end marker, calling `visit` for each (regular files and every other
// type, so callers can report what they skip). Returns an empty string, or what is wrong with the
// archive (nothing in it, bad header checksum, truncation, a member declaring more than
// `max_member` bytes or more than the archive holds); members before the defect have been visited.
// A declared size is checked before anything is allocated for it, and content is read in bounded
// chunks: memory grows with the bytes actually read, never with what a header claims, also when
// the stream's size is unknown (a pipe).
std::string read_tar(std::istream& in, std::uint64_t max_member,
                     const std::function<void(TarMember&&)>& visit);

}  // namespace cubby::cli
