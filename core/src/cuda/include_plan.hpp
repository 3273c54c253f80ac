// How a request's include options are read: the one parser of NVRTC's -I / pre-include
// spellings (NVRTC's own option rules, beside its option table nvrtc_options.hpp), and the
// include plan of a request. The plan is made once per request, by whoever serves it (the Cache),
// and handed to everything that reads headers for it: key derivation (the header scan), the NVRTC
// compile (nvrtc_compile.hpp) and the check after it, so all three follow one reading.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "cubby/nvrtc.hpp"
#include "cuda/include_search.hpp"

namespace cubby {

// NVRTC's include options, parsed as NVRTC 13 parses them (checked by compiling): the one parser
// that key derivation and compile share. Spellings: include path `-I DIR`, `-IDIR`, `-I=DIR`,
// `--include-path DIR`, `--include-path=DIR`; pre-include `-include F`, `-include=F`,
// `--pre-include F`, `--pre-include=F`; `-no-source-include` / `--no-source-include`. The value
// of an option that takes a separate value (`-D X`, `-Xptxas -v`, ...) is never read as an
// option. A trailing `-I` or `-include` with no value is passed on unchanged (NVRTC rejects it).
// Front-end options (`-Xcudafe X`, `-Xcudafe=X`, passed on verbatim) that change the header set
// are read too: `--preinclude=F` / `--preinclude F` into pre_includes, `--include_directory=D`,
// `--sys_include=D` (or with a separate value) and `-ID` into include_paths (a superset of the
// front end's search, which the scan over-approximates anyway); a few diagnostics options are
// known to read no file; any other front-end option is listed in `unmodelled`.
struct IncludeOptions {
  std::vector<std::string> include_paths;  // in order (-Xcudafe folders after NVRTC's own)
  std::vector<std::string> pre_includes;   // in order (-Xcudafe files after NVRTC's own)
  std::vector<std::string> defines;        // the values of -D X, -DX, -D=X, --define-macro(=)X
  bool no_source_include = false;
  // "-Xcudafe X" for each front-end option whose effect on the headers read is not modelled: a
  // program with any has no trustworthy key (it is compiled without the store, like a macro
  // include: HeaderScan::unresolvable).
  std::vector<std::string> unmodelled;
  // The options in order, each include option in one spelling (`--include-path=DIR`,
  // `--pre-include=F`), all others verbatim: what compile passes to NVRTC, so that NVRTC reads
  // exactly the folders and files the key scanned.
  std::vector<std::string> nvrtc_options;
};
IncludeOptions parse_include_options(const std::vector<std::string>& options);

// parse_include_options(options).include_paths as paths.
std::vector<std::filesystem::path> include_paths_from_options(
    const std::vector<std::string>& options);

// How one request's headers are found, shared by key derivation and compile so that both read
// the options the same way (parse_include_options) and agree on NVRTC's search order.
struct IncludePlan {
  IncludeSearch search;                 // what the key's header scan models
  std::vector<std::string> unmodelled;  // IncludeOptions::unmodelled
  std::vector<std::string> options;     // what compile passes to NVRTC, before the architecture:
                                     // --include-path=<source_dir> (if set), the request's options
                                     // (include options in one spelling), then the toolkit's
                                     // include/cccl and include folders
};

// The include plan of `request` with the toolkit include folder `toolkit_include_dir` (may be
// empty). `search.program_dir` is the folder of the program name (relative names from the
// working folder; empty with -no-source-include); `search.include_paths` are `source_dir` then
// the -I folders, leaving out those inside the toolkit folder (covered by
// KeyInputs::toolkit_headers).
IncludePlan plan_includes(const CompileRequest& request,
                          const std::filesystem::path& toolkit_include_dir);

// Whether `plan` (plan_includes(request, ...)) still says where NVRTC looks for `request`'s
// headers: false when the program folder it took from the working folder is no longer the one
// NVRTC would search (the working folder changed since the plan was made). Cheap: no file read.
bool plan_still_current(const IncludePlan& plan, const CompileRequest& request);

}  // namespace cubby
