// The recipes one Cache records for its suite (Config::suite), in the order it was first asked
// for them, saved into the suite's manifest in the store (storage/local/manifests.hpp) and
// uploaded to the remote, where a fresh runner's `cubby warm` finds it (store/suites.hpp), when
// the Cache finishes; with them the key of each (the suite's keys, which a fresh runner reads
// ahead). A request whose key the suite's keys file already holds (an earlier run recorded its
// recipe) is not recorded again: a warm run builds no recipe and writes nothing, and a run that
// brings new recipes puts them first, before the suite's older ones in their recorded order.
// Thread-safe; a request already recorded costs one set lookup.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cubby/key.hpp"
#include "cubby/nvrtc.hpp"
#include "format/recipe.hpp"

namespace cubby {

class Remote;

class SuiteRecorder {
 public:
  // Records into the manifest of `suite` in the store at `root`; `base_dir`: Config::base_dir
  // (recipe_of records paths under it relative to it).
  SuiteRecorder(std::string suite, std::filesystem::path root, std::filesystem::path base_dir)
      : suite_(std::move(suite)), root_(std::move(root)), base_dir_(std::move(base_dir)) {}

  const std::string& suite() const { return suite_; }

  // Records `request` (whose key is `key`; `inputs_of()` gives its key inputs, called only to
  // build a recipe) unless its key already was, in this run or in the suite's keys file (read at
  // the first call).
  void add(const Key& key, const CompileRequest& request,
           const std::function<KeyInputs()>& inputs_of);

  // Merges what was recorded since the last save into the suite's manifest (record_manifest) and
  // its keys (record_suite_keys) and, when `remote` is given, queues the keys for it when they
  // changed (a new recipe or key), and the manifest when it changed too, unless the keys show
  // the fleet already has every recipe of this run (their file did not change). A store that cannot
  // be written is said on stderr (once per recorder): `cubby warm` and prefetch will not know this
  // run's kernels; the recipes are tried again by the next save.
  void save(Remote* remote);

 private:
  std::string suite_;
  std::filesystem::path root_;
  std::filesystem::path base_dir_;
  std::mutex mutex_;
  std::set<Key> keys_;
  std::optional<std::set<Key>> known_;  // the keys file's keys, once read
  std::vector<Recipe> recipes_;
  std::vector<Key> order_;  // the key of each of recipes_
  // Distinct header lists of recipes_, shared by the recipes that read them (at most
  // kSharedLists are looked through).
  static constexpr std::size_t kSharedLists = 16;
  std::vector<HeaderPaths> lists_;
  std::size_t saved_ = 0;  // recipes_ up to here are in the manifest
  std::atomic<bool> warned_{false};
};

}  // namespace cubby
