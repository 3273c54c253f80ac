// Prefetch: `cubby warm --prefetch` started beside a test run, so that the kernels a suite
// recorded in an earlier run (format/recipe.hpp) compile in worker processes while its tests run;
// a test that needs a kernel a worker is compiling waits on the per-key lock instead of compiling
// it again. The GoogleTest harness and the pytest plugin start one; any program may.
#pragma once

#include <filesystem>
#include <string>

#include "cubby/config.hpp"
#include "cubby/export.h"

namespace cubby {

// When a prefetch starts deriving keys and compiling: at once, or when a process of the run
// first misses (a warm run then costs it nothing beyond reading the suite's manifest; the
// GoogleTest harness and the pytest plugin start theirs so).
enum class PrefetchStart { now, at_first_miss };

class CUBBY_API Prefetch {
 public:
  Prefetch() = default;
  // Starts the prefetch of suite `config.suite` on `config.dir`, unless: prefetch is off
  // (Config::prefetch), the store is read-only or disabled, the suite has no recipes recorded in
  // the store and no remote that may hold them, or the `cubby` tool cannot be found (locate_cli).
  // note() then says why, when it is worth saying (empty for a suite never recorded). The
  // prefetch ends with this process (even on kill -9: it gets SIGTERM, its workers SIGKILL),
  // with the thread that started it, and with stop(). A running one is stopped first. It and its
  // workers run at nice 19 (the lowest priority): the run it serves keeps the CPU it needs.
  // With PrefetchStart::at_first_miss it waits, having read the recipes, until a process using
  // the store for this suite (a Cache whose Config::suite is it) misses a key after this call;
  // not where the run will miss: an entry of the suite's last run is gone, or a header its
  // recipes read was written since that run (warm/first_miss.hpp).
  void start(const Config& config, PrefetchStart when = PrefetchStart::now);
  ~Prefetch();  // stop()
  Prefetch(const Prefetch&) = delete;
  Prefetch& operator=(const Prefetch&) = delete;

  // Ends the prefetch: SIGTERM (its workers are killed, their PCH folders removed), then SIGKILL
  // after 5 s. Idempotent.
  void stop();
  bool running() const { return pid_ > 0; }
  long pid() const { return pid_; }
  const std::string& note() const { return note_; }

 private:
  long pid_ = 0;
  std::string note_;
};

// The `cubby` tool: $CUBBY_CLI; else beside the file holding this library (<dir>/../bin/cubby,
// <dir>/cubby, <dir>/../cli/cubby); else the one of cubby's build tree, else the installed one;
// else `cubby` on PATH. Empty when none is an executable file.
CUBBY_API std::filesystem::path locate_cli();

}  // namespace cubby
