// decode_entry for bytes the caller gives up (a read of the disk tier): the same checks, and the
// payload takes over their buffer instead of being copied out of it, so a warm hit of a large
// CUBIN allocates it once rather than twice (a second transient buffer of that size made every
// hit fault its pages in again whenever the allocator returned them to the system).
#pragma once

#include <string>

#include "cubby/entry.hpp"
#include "cubby/error.hpp"
#include "cubby/key.hpp"

namespace cubby {

// decode_entry(bytes, key); on success `bytes` is moved into the entry's payload (on failure it
// is left as it was).
Result<Entry> decode_entry_in_place(std::string&& bytes, const Key& key);

}  // namespace cubby
