#include "cache/suite_recorder.hpp"

#include "storage/local/manifests.hpp"

namespace cubby {

void SuiteRecorder::add(const Key& key, const CompileRequest& request, const KeyInputs& inputs) {
  std::lock_guard lock(mutex_);
  if (keys_.size() >= kMaxManifestRecipes || !keys_.insert(key).second) return;
  recipes_.push_back(recipe_of(request, inputs, base_dir_));
}

Result<std::optional<std::string>> SuiteRecorder::save(const std::filesystem::path& root) {
  std::lock_guard lock(mutex_);
  if (saved_ == recipes_.size()) return std::optional<std::string>();
  auto written = record_manifest(root, suite_, recipes_);
  if (written) saved_ = recipes_.size();
  return written;
}

}  // namespace cubby
