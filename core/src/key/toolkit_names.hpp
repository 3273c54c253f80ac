// The names the toolkit's own headers reach, for looking them up in the user's include folders
// (NVRTC searches those first): part of the header scan (include_scan.hpp).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cubby {

// Names by first path component ("cuda" -> {"cuda/std/version", ...}).
using ToolkitNames = std::map<std::string, std::vector<std::string>, std::less<>>;

// Every name the toolkit headers reached from `root` include or probe (root included), found by
// following each name into its includer's folder and every toolkit folder (all existing
// candidates: a superset; literal names only: the toolkit's own computed includes are covered by
// KeyInputs::toolkit_headers). Memoized per process by (toolkit folders, root), whatever the
// folder; never invalidated; kept between processes in `folder` (a store's tmp/; empty: nowhere):
// each folder's names file is read, and written unless it is whole, at most once per process,
// the closure taken from the memo too (two stores in one process each get their file).
// Thread-safe.
std::shared_ptr<const ToolkitNames> toolkit_closure(const std::vector<std::string>& toolkit_dirs,
                                                    const std::string& root,
                                                    const std::filesystem::path& folder);

// Forgets the per-process memo of toolkit_closure (the files stay).
void forget_toolkit_closures();

}  // namespace cubby
