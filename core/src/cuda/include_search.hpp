// Where NVRTC looks for the headers of one program: NVRTC's search order, which the include plan
// (include_plan.hpp) fills in and the key's header scan (key/include_scan.hpp) follows.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace cubby {

// NVRTC 13's order, checked by compiling: a quoted include is looked up in the including file's
// folder (for the program itself: the folder of the program name, taken from the working folder;
// neither with -no-source-include), then in the include paths in order, then the toolkit's
// folders; an angled one in the include paths, then the toolkit. A pre-included file is opened
// from the working folder first, then searched in the include paths. Folders of the include
// stack are not searched.
struct IncludeSearch {
  std::filesystem::path program_dir;  // the program name's folder; empty: not searched
  std::vector<std::filesystem::path> include_paths;  // user folders, in order (no toolkit folder)
  std::vector<std::string> pre_includes;             // files, in order
  // The toolkit's folders (include/cccl, include), searched after the user's: not hashed (the key
  // holds KeyInputs::toolkit_headers), but the names their headers include are looked up in the
  // user's folders, which NVRTC searches first (a user's inc/version shadows CCCL's <version>).
  std::vector<std::filesystem::path> toolkit_dirs;
  // The `-D` options' values in order ("X", "X=Y", "F(a)=a"): definitions the scan expands
  // computed includes with (key/computed_includes.hpp).
  std::vector<std::string> defines;
  // The program's name, for messages about its own lines only (not read by the scan).
  std::string program_name;
};

}  // namespace cubby
