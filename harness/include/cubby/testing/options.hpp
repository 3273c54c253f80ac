// Settings of the GoogleTest harness: the store folder and whether any compile fails a test.
// From the environment (CUBBY_DIR, CUBBY_REQUIRE_WARM) and command-line flags (--cubby_dir=,
// --cubby_require_warm, --cubby_quiet); flags win.
#pragma once

#include <filesystem>
#include <string>

namespace cubby::testing {

struct Options {
  // The store folder; empty: cubby's default (CUBBY_DIR, else $XDG_CACHE_HOME/cubby, ...).
  std::filesystem::path dir;
  // Any compile (a store miss) fails the test that caused it, with the key's fields printed.
  bool require_warm = false;
  // No one-line summary at the end of the run.
  bool quiet = false;

  // CUBBY_REQUIRE_WARM (1/0, true/false, yes/no, on/off); `dir` stays empty so that the cache
  // resolves CUBBY_DIR itself. Throws cubby::Error (invalid_argument) on a malformed value.
  static Options from_env();
};

// Reads and removes the harness's flags from argv (updating *argc), starting from `defaults`:
//   --cubby_dir=DIR  --cubby_require_warm[=BOOL]  --cubby_quiet[=BOOL]
// Other arguments are left in place, in order. Throws cubby::Error (invalid_argument) for an
// unknown --cubby_ flag or a malformed value, naming the flags it knows.
Options parse_flags(int* argc, char** argv, Options defaults);
Options parse_flags(int* argc, char** argv);  // defaults: Options::from_env()

// The flags' help text (one line each), printed by cubby::gtest_main with --help.
std::string flags_help();

}  // namespace cubby::testing
