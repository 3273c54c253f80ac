// The suites of a store, as `cubby warm`, prefetch and a fresh runner's read-ahead read them:
// each suite's manifest (its recorded recipes, format/recipe.hpp) from the store, else from the
// remote, where the run that recorded it uploaded it (store/suite_recorder.hpp), the lock that
// keeps one warm of a suite at a time, and what a fresh runner reads ahead (the suite's keys from
// the remote). Files: <root>/manifests/<stem>.manifest, <stem>.keys, <stem>.warm.lock and
// <stem>.read-ahead.lock (storage/local/manifests.hpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/config.hpp"
#include "cubby/error.hpp"
#include "format/recipe.hpp"
#include "storage/remote/read_ahead.hpp"
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
// is not asked). With `not_replayable`: why the store's manifest must not be replayed as you
// ("<its path> <io::not_trusted_because>": another user may have written it; a replay compiles its
// recipes, and whatever files their sources read, as you), "" when it may (a manifest from the
// remote was fetched as you, through your own settings).
Result<std::optional<Manifest>> load_suite(const Config& config, std::string_view suite,
                                           std::string* not_replayable = nullptr);

// What a fresh runner of `suite` reads ahead (storage/remote/read_ahead.hpp): the keys of the
// suite's keys on `remote` (suite_keys_key: the recorder of the fleet's last run uploaded them).
// When the read-ahead stops, they are merged into the store's keys file at `root` (a partial run
// here then adds to the fleet's keys when it uploads its own, never drops some). Until then a
// flock on <stem>.read-ahead.lock is held: one process per store folder and suite reads ahead
// (xdist workers or test processes started together would each fetch every entry). No keys when
// another process reads ahead, or the remote has no usable keys (a miss, a failure, a value that
// does not decode or is another suite's).
ReadAheadPlan read_ahead_plan(const std::filesystem::path& root, std::string_view suite,
                              Remote& remote);

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
