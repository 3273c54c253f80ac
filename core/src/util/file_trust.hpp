// Who may have written a file: a store shared by a group is written by several users, so what
// cubby reads from it that can steer a process (the settings that name a remote or a file, the
// scan record, the toolkit names) is taken only from a file no other user could have written.
// The anchor is git's safe.directory (ownership), tightened like ssh's StrictModes (a file its
// group may write is another user's file as much as one they own). Contracts only; policy (what
// is read from whom) lives with each reader.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "cubby/error.hpp"

namespace cubby::io {

// Whether only this process's user (its effective uid), or with `root_too` also root, can have
// written the file `st` describes (an fstat of the open file, not of a path that may be swapped
// after): a regular file owned by that user, writable by neither its group nor others.
bool written_only_by_me(const struct stat& st, bool root_too);

// Why written_only_by_me(st, root_too) is false, for a message: "is owned by nobody (uid 65534),
// not by you (alice)" or "is writable by its group (mode 0664)"; empty when it is true.
std::string not_mine_because(const struct stat& st, bool root_too);

// Whether the file `st` describes can have been written only by this process's user, root, or a
// user CUBBY_TRUSTED_OWNERS names (names or uids, separated by commas or spaces: the variable of
// the person running cubby, never a store's setting): a regular file owned by one of them, writable
// by neither its group nor others. What cubby would run as you from a shared store (a suite's
// recipes, replayed by `cubby warm` and the prefetch) is taken only from such a file.
bool written_by_trusted(const struct stat& st);

// Why written_by_trusted(st) is false, for a message (as not_mine_because, naming
// CUBBY_TRUSTED_OWNERS); empty when it is true.
std::string not_trusted_because(const struct stat& st);

// "nobody (uid 65534)"; "uid 1234" for a uid without a name.
std::string user_text(uid_t uid);

// io::read_file(path, max_bytes) of a file that only this process's user can have written
// (written_only_by_me(.., false), judged on the open file): its errors, and Errc::corrupt saying
// why for a file another user may have written (it is not read further). `opened`: the file's
// stat as opened (all zero when it could not be opened).
Result<std::string> read_own_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                                  struct stat* opened = nullptr);

}  // namespace cubby::io
