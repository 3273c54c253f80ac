// Whether a stat can prove a header unchanged since an earlier stat, by the file system it is on:
// what the scan's memo (scan_watch.hpp), its book (scan_book.hpp) and its record between processes
// (scan_record.hpp) rely on before they skip reading a header.
// - Trusted (the local kernel sees every change, and a file that changes gets a new mtime/ctime
//   or inode): ext2/3/4, XFS, Btrfs, tmpfs, F2FS, ZFS, ramfs, and overlayfs over those.
// - Not trusted, so a header there is read and hashed in every process: network file systems
//   (NFS, CIFS/SMB, FUSE, 9p, Ceph, Lustre: another host's edit goes unseen) and read-only images
//   (SquashFS, EROFS, ISO 9660: an image rebuilt and mounted again at the same path, as an
//   Apptainer/SIF image is, keeps device, inode, size, mtime and ctime of every file), and an
//   overlayfs with a lower layer on one of those (as Apptainer's root is).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cubby {

// Whether a file system type (statfs f_type) is trusted on its own (the list above; overlayfs
// counts as trusted here: see stat_trusted).
bool trusted_file_system(std::int64_t f_type);

// The lower folders of the overlayfs mount that holds `path`, read from `mountinfo` (the text of
// /proc/self/mountinfo): the mount whose mount point is the longest prefix of `path`; none when
// that mount is not an overlay (or its lowerdir cannot be read).
std::vector<std::string> overlay_lower_dirs(std::string_view mountinfo, const std::string& path);

// Whether a stat of the file at `path`, on a file system of type `f_type` (statfs), proves it
// unchanged: trusted_file_system, and for an overlay every lower folder that can be looked at is
// on a trusted file system (lower folders this process cannot see, as a container's host paths,
// do not count). Memoized per overlay mount; thread-safe.
bool stat_trusted(const std::string& path, std::int64_t f_type);

// stat_trusted of the file at `path` on device `dev` (its statfs type asked once per device per
// process; a file whose type cannot be told is not trusted, and asked again next time).
bool device_trusted(const std::string& path, dev_t dev);

}  // namespace cubby
