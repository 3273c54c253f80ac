#include "store/suite_recorder.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "storage/local/manifests.hpp"
#include "storage/remote/remote.hpp"
#include "util/file_trust.hpp"

namespace cubby {

void SuiteRecorder::add(const Key& key, const CompileRequest& request,
                        const std::function<KeyInputs()>& inputs_of) {
  std::lock_guard lock(mutex_);
  if (keys_.size() >= kMaxManifestRecipes || !keys_.insert(key).second) return;
  if (!known_) {
    known_.emplace();
    // Keys recorded in a manifest another user may have written are not this user's recipes:
    // the run records its own (record_manifest then replaces that manifest with them).
    struct stat manifest {};
    if (::stat(manifest_path(root_, suite_).c_str(), &manifest) != 0 ||
        io::written_by_trusted(manifest)) {
      for (const RecipeKey& pair : load_suite_keys(root_, suite_)) known_->insert(pair.key);
    }
  }
  if (known_->contains(key)) return;  // its recipe is in the manifest already
  Recipe recipe = recipe_of(request, inputs_of(), base_dir_);
  // Most recipes of a suite read one of a few header lists (CuPy's: 5 of ~960 paths): a list
  // equal to one already recorded is shared, not kept again.
  const auto shared = std::find(lists_.begin(), lists_.end(), recipe.header_paths);
  if (shared != lists_.end()) {
    recipe.header_paths = *shared;
  } else if (lists_.size() < kSharedLists) {
    lists_.push_back(recipe.header_paths);
  }
  recipes_.push_back(std::move(recipe));
  order_.push_back(key);
}

void SuiteRecorder::save(Remote* remote) {
  std::lock_guard lock(mutex_);
  if (saved_ == recipes_.size()) return;
  auto written = record_manifest(root_, suite_, recipes_);
  if (!written) {
    if (!warned_.exchange(true)) {
      std::fprintf(stderr,
                   "cubby: could not record suite '%s' (%s); `cubby warm` and prefetch will not "
                   "know this run's kernels (shown once)\n",
                   suite_.c_str(), written.error().message.c_str());
    }
    return;
  }
  saved_ = recipes_.size();
  // The keys a fresh runner reads ahead (storage/remote/read_ahead.hpp). A keys file that cannot
  // be written is not said: the manifest's write just succeeded, and the keys only save time.
  std::vector<RecipeKey> keys;
  keys.reserve(recipes_.size());
  for (std::size_t i = 0; i < recipes_.size(); ++i) {
    keys.push_back({recipe_id(recipes_[i]), order_[i]});
  }
  auto keys_written = record_suite_keys(root_, suite_, keys);
  if (remote == nullptr) return;
  if (keys_written && *keys_written) remote->put_later(suite_keys_key(suite_), **keys_written);
  // A fresh runner of the fleet learns what to warm from the remote (`cubby warm` fetches it).
  // Not sent again when the keys say the fleet already knows every recipe of this run: another
  // order alone, or a fresh runner whose recipes all came with the fleet's keys.
  if (*written && (!keys_written || *keys_written)) {
    remote->put_later(manifest_key(suite_), **written);
  }
}

}  // namespace cubby
