// When and where one Cache's compiles use NVRTC's automatic precompiled headers (CUBBY_PCH): the
// process's PCH folder in the store (pch_dir.hpp), made on the first compile, then a sub-folder
// per fingerprint, the set of (options, architecture, header contents) a PCH is valid for, so
// that a PCH is never reused after a header edit (NVRTC's own check goes by file times) or under
// other options. Thread-safe.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>

#include "cubby/config.hpp"
#include "cubby/key.hpp"
#include "cubby/nvrtc.hpp"

namespace cubby {

class PchDir;

class PchPolicy {
 public:
  // The policy of Config::pch / pch_eager for the store at config.dir: off for a read-only or
  // disabled store. Touches nothing until the first folder_for.
  explicit PchPolicy(const Config& config);
  ~PchPolicy();
  PchPolicy(const PchPolicy&) = delete;
  PchPolicy& operator=(const PchPolicy&) = delete;

  // The folder NVRTC keeps the PCH of `request` in (`inputs`: its key inputs, whose headers are
  // part of the fingerprint), or empty: PCH off, headers the scan cannot name (no fingerprint), a
  // folder that cannot be made or is not safe to use, and the first compile of each fingerprint
  // (unless pch_eager): saving a PCH costs about a quarter more than the compile, which only
  // later compiles with the same headers repay, so the second one saves it and later ones reuse it.
  std::filesystem::path folder_for(const CompileRequest& request, const KeyInputs& inputs);

  // After a compile with a PCH folder: when NVRTC could not use precompiled headers, turns PCH off
  // for this policy's later compiles (said on stderr, once).
  void note(const PchOutcome& outcome);

  // Removes the PCH files of `folder` (a folder_for answer): a header changed while they were
  // made, so they must not serve later compiles.
  void discard(const std::filesystem::path& folder);

 private:
  std::filesystem::path root_;
  bool enabled_;
  bool eager_;
  std::once_flag once_;
  std::shared_ptr<PchDir> dir_;   // shared by the process's policies on this store
  std::atomic<bool> off_{false};  // PCH failed: compile without from now on
};

}  // namespace cubby
