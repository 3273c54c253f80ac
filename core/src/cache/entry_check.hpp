// What a lookup checks of an entry found under a request's key (disk, remote, read ahead), beside
// the checksum decode_entry checked: that it is the entry for the request's name expressions.
#pragma once

#include <string>
#include <vector>

#include "cubby/entry.hpp"
#include "cubby/error.hpp"

namespace cubby {

// The sorted, de-duplicated name expressions of a request (what an entry under its key holds).
std::vector<std::string> distinct_names(std::vector<std::string> names);

// Checks that an entry stored under a key derived from `names` (distinct_names) is the entry for
// them: it holds a lowered name for each expression, and each lowered name is a symbol of its
// payload. Errc::corrupt otherwise.
Result<void> validate_entry(const Entry& entry, const std::vector<std::string>& names);

}  // namespace cubby
