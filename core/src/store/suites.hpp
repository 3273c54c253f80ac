// The suites of a store, as `cubby warm` and prefetch read them: each suite's manifest (its
// recorded recipes, format/recipe.hpp) from the store, else from the remote, where the run that
// recorded it uploaded it (store/suite_recorder.hpp), and the lock that keeps one warm of a suite
// at a time. Files: <root>/manifests/<stem>.manifest and <stem>.warm.lock
// (storage/local/manifests.hpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/config.hpp"
#include "cubby/error.hpp"
#include "format/recipe.hpp"
#include "store/store.hpp"

namespace cubby {

class FileLock;

// The suite names of the store's readable manifests, sorted. Damaged files are skipped; when
// `problems` is given, it gets a message for each (naming the file).
std::vector<std::string> list_suites(const Store& store,
                                     std::vector<std::string>* problems = nullptr);

// `suite`'s manifest: the store's (at config.dir), else, when the store has none, the remote's
// (CUBBY_REMOTE: for a runner that never ran the suite), saved into the store. nullopt when
// neither has one (a remote that fails, or holds a manifest that does not decode or is another
// suite's, has none). Errc::corrupt or Errc::io: the store's manifest cannot be read (the remote
// is not asked).
Result<std::optional<Manifest>> load_suite(const Config& config, std::string_view suite);

// Held by the one `cubby warm` of a suite (a second prefetch of it leaves the work to the first):
// a flock on <root>/manifests/<stem>.warm.lock, dropped with the object or the process.
class SuiteWarmLock {
 public:
  // The lock, or nullopt when another process holds it or it cannot be taken.
  static std::optional<SuiteWarmLock> try_acquire(const Store& store, std::string_view suite);

  SuiteWarmLock(SuiteWarmLock&&) noexcept;
  SuiteWarmLock& operator=(SuiteWarmLock&&) noexcept;
  ~SuiteWarmLock();

 private:
  explicit SuiteWarmLock(std::unique_ptr<FileLock> lock);
  std::unique_ptr<FileLock> lock_;
};

}  // namespace cubby
