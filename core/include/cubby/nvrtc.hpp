// NVRTC, loaded lazily with dlopen: locating the library (no load, no call) for keys, and
// compiling with name expressions (lowered names captured exactly as NVRTC returns them).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cubby/error.hpp"
#include "cubby/export.h"
#include "cubby/types.hpp"

namespace cubby {

// The NVRTC library cubby will load, found without loading it.
struct NvrtcLibrary {
  std::filesystem::path path;         // the file dlopen will be given (symlinks resolved)
  std::string version;                // "13.0": major.minor as nvrtcVersion reports it
  std::string identity;               // "<version>;<size>;<GNU build-id>", or with no build-id
                                      // "<version>;<size>;<canonical path>;mtime:<ns>"
  std::filesystem::path include_dir;  // the toolkit's include folder beside it (holds nvrtc.h and
                                      // cuda/std/...); empty if there is none
};

// Finds libnvrtc without loading it, in this order: $CUBBY_NVRTC_LIBRARY (a file);
// $CUDA_HOME/lib64, $CUDA_PATH/lib64; the toolkit folder cubby was built against;
// /usr/local/cuda/lib64; each folder of $LD_LIBRARY_PATH; the system library folders.
// The version is read from the libnvrtc-builtins.so.<major>.<minor> file beside it.
// The toolkit's headers (`include_dir`) are covered by the identity: NVRTC needs
// `-I<include_dir>` to find <cuda/std/...>, and the key does not scan that folder.
// Memoized per process. nvrtc_unavailable with the folders searched if none is found.
CUBBY_API Result<NvrtcLibrary> locate_nvrtc();

// What to compile. `arch` "sm_XX[a|f]" gives a CUBIN, "compute_XX[a|f]" gives PTX; with the
// option "-dlto" (or its long name "--dlink-time-opt") the payload is LTO-IR.
struct CompileRequest {
  std::string source;
  std::string program_name = "cubby_program.cu";
  std::vector<std::string> name_expressions;
  std::vector<std::string> options;  // NVRTC options, without the architecture
  std::string arch;                  // empty: the cache picks (CUBBY_ARCH, GPU 0, else sm_90)
  std::filesystem::path source_dir;  // the source file's folder, searched as the first include
                                     // path (after the program name's folder for quoted
                                     // includes: see IncludeSearch); may be empty
};

// The payload kind `arch` and `options` produce (cubin for sm_*, ptx for compute_*, ltoir with
// -dlto or --dlink-time-opt).
CUBBY_API PayloadKind payload_kind_for(const std::string& arch,
                                       const std::vector<std::string>& options);

// Compiles `request` for `request.arch` (which must be set) and returns an Entry whose
// lowered_names map has one element per distinct name expression, exactly as
// nvrtcGetLoweredName returned it. Errc::compile_failed carries NVRTC's log in its message;
// invalid_argument for an arch option inside `options` or an empty arch; nvrtc_unavailable if
// the library cannot be loaded. The options NVRTC gets are `plan_includes(...).options` plus the
// architecture, so <cuda/std/mdspan> works without options. Thread-safe.
CUBBY_API Result<Entry> compile_nvrtc(const CompileRequest& request);

// What one compile did with automatic precompiled headers (see compile_nvrtc with a PCH folder).
struct PchOutcome {
  bool requested = false;  // cubby asked NVRTC for automatic PCH (-pch) in this compile
  bool created = false;    // NVRTC saved a PCH of this program's headers for later compiles
  bool reused = false;     // NVRTC reused a PCH saved by an earlier compile of this process
  bool grown = false;      // NVRTC ran out of PCH heap: the heap was grown for the next compile
  bool failed = false;     // PCH cannot work in this process (its heap cannot grow, or NVRTC
                           // could not write it: the compile was done again without): stop asking
  std::string why;         // when failed: what NVRTC said
};

// compile_nvrtc with NVRTC's automatic precompiled headers (NVRTC 12.8+, `-pch`) kept in
// `pch_dir`, a folder of this process: the first compile of a process saves the parsed headers
// there and later compiles whose programs start with the same includes reuse them (about 5x
// faster; PCH files are valid only in the process that made them). Not asked for when the
// request's options already choose (any option naming pch: -pch, -create-pch, -use-pch,
// -pch-dir, ...: left as they are), when `pch_dir` is empty, or when NVRTC lacks PCH. The entry
// is what compile_nvrtc(request) gives (the PCH options are not in its options, NVRTC's PCH
// messages not in its log). Out of PCH heap, the heap is grown to what NVRTC asks for (the next
// compile creates the PCH); a compile that fails over its PCH (a full disk) is done again without;
// `pch` says what happened.
CUBBY_API Result<Entry> compile_nvrtc(const CompileRequest& request,
                                      const std::filesystem::path& pch_dir, PchOutcome& pch);

// nvrtcVersion() of the loaded library as "major.minor" (loads NVRTC). For tests and diagnostics.
CUBBY_API Result<std::string> loaded_nvrtc_version();

}  // namespace cubby
