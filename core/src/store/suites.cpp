#include "store/suites.hpp"

#include <utility>

#include "storage/local/lock.hpp"
#include "storage/local/manifests.hpp"
#include "storage/remote/remote.hpp"
#include "util/file_trust.hpp"

namespace cubby {
namespace {

// `suite`'s manifest from the remote (saved in the store), for a runner that never ran the suite.
std::optional<Manifest> remote_manifest(const Config& config, std::string_view suite) {
  if (config.remote_url.empty()) return std::nullopt;
  auto remote = open_remote_tier(config);
  if (!remote) return std::nullopt;
  auto bytes = remote->get(manifest_key(suite));
  if (!bytes || !bytes->has_value()) return std::nullopt;
  auto manifest = decode_manifest(**bytes);
  if (!manifest || manifest->suite != suite) return std::nullopt;
  static_cast<void>(save_manifest(config.dir, *manifest));
  return std::move(manifest).value();
}

}  // namespace

std::vector<std::string> list_suites(const Store& store, std::vector<std::string>* problems) {
  return list_suites(store.root(), problems);
}

Result<std::optional<Manifest>> load_suite(const Config& config, std::string_view suite,
                                           std::string* not_replayable) {
  struct stat opened {};
  auto loaded = load_manifest(config.dir, suite, &opened);
  if (not_replayable != nullptr) {
    not_replayable->clear();
    if (loaded && *loaded && !io::written_by_trusted(opened)) {
      *not_replayable =
          manifest_path(config.dir, suite).string() + " " + io::not_trusted_because(opened);
    }
  }
  if (!loaded || *loaded) return loaded;
  return remote_manifest(config, suite);
}

ReadAheadPlan read_ahead_plan(const std::filesystem::path& root, std::string_view suite,
                              Remote& remote) {
  auto lock = FileLock::try_acquire(suite_file(root, suite, ".read-ahead.lock"));
  if (!lock || !lock->has_value()) return {};
  auto bytes = remote.get(suite_keys_key(suite));
  if (!bytes || !bytes->has_value()) return {};
  auto keys = decode_suite_keys(**bytes);
  if (!keys || keys->suite != suite) return {};
  ReadAheadPlan plan;
  plan.keys.reserve(keys->keys.size());
  for (const RecipeKey& pair : keys->keys) plan.keys.push_back(pair.key);
  plan.after = [root, suite = std::string(suite), fleet = std::move(keys->keys),
                held = std::make_shared<FileLock>(std::move(**lock))] {
    static_cast<void>(record_suite_keys(root, suite, fleet));  // only saves time: unsaid
  };
  return plan;
}

std::optional<SuiteWarmLock> SuiteWarmLock::try_acquire(const Store& store,
                                                        std::string_view suite) {
  auto lock = FileLock::try_acquire(suite_file(store.root(), suite, ".warm.lock"));
  if (!lock || !lock->has_value()) return std::nullopt;
  return SuiteWarmLock(std::make_unique<FileLock>(std::move(**lock)));
}

SuiteWarmLock::SuiteWarmLock(std::unique_ptr<FileLock> lock) : lock_(std::move(lock)) {}
SuiteWarmLock::SuiteWarmLock(SuiteWarmLock&&) noexcept = default;
SuiteWarmLock& SuiteWarmLock::operator=(SuiteWarmLock&&) noexcept = default;
SuiteWarmLock::~SuiteWarmLock() = default;

}  // namespace cubby
