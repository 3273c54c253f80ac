// What a recipe replayed by `cubby warm` (and so by every prefetch) may do and say. A recipe can
// come from anyone who can write the store's manifests, the remote tier, or an imported archive:
// replaying it must not write or read files outside its include plan, and what its failure says
// must not carry the contents of files outside the recipe's own source.
#pragma once

#include <string>

#include "cubby/error.hpp"
#include "cubby/nvrtc.hpp"

namespace cubby {

// Ok when `request` (a recipe's) carries only options that are safe to replay
// (check_replayable_options in cuda/nvrtc_options.hpp); else Errc::invalid_argument naming the
// first option that is not.
Result<void> check_replayable(const CompileRequest& request);

// What a failed replay of `request` reports (`cubby warm --json`'s failed[].error): the first
// line of `error`'s message and, of NVRTC's log, only the diagnostics located in the recipe's own
// source (`<program>(N): ...` with N one of its lines), each followed by its source line only when
// that line is the recipe's own line N. Diagnostics located in headers are summed up as a count:
// a header may be any file (`#include "/etc/passwd"`) and its lines never leave the worker.
std::string replay_error(const CompileRequest& request, const Error& error);

}  // namespace cubby
