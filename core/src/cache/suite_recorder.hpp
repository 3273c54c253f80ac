// The recipes one Cache records for its suite (Config::suite), in the order it was first asked
// for them, saved into the suite's manifest (storage/local/manifests.hpp) when the Cache finishes.
// Thread-safe; a request already recorded costs one set lookup.
#pragma once

#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cubby/error.hpp"
#include "cubby/key.hpp"
#include "cubby/nvrtc.hpp"
#include "format/recipe.hpp"

namespace cubby {

class SuiteRecorder {
 public:
  // `base_dir`: Config::base_dir (recipe_of records paths under it relative to it).
  SuiteRecorder(std::string suite, std::filesystem::path base_dir)
      : suite_(std::move(suite)), base_dir_(std::move(base_dir)) {}

  const std::string& suite() const { return suite_; }

  // Records `request` (whose key is `key` and key inputs `inputs`) unless its key already was.
  void add(const Key& key, const CompileRequest& request, const KeyInputs& inputs);

  // Merges what was recorded since the last save into the manifest of the store at `root`:
  // record_manifest's result (the bytes written, or nullopt when nothing changed).
  Result<std::optional<std::string>> save(const std::filesystem::path& root);

 private:
  std::string suite_;
  std::filesystem::path base_dir_;
  std::mutex mutex_;
  std::set<Key> keys_;
  std::vector<Recipe> recipes_;
  std::size_t saved_ = 0;  // recipes_ up to here are in the manifest
};

}  // namespace cubby
