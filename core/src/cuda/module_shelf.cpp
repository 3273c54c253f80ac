// ModuleShelf (contract in module_shelf.hpp).
#include "cuda/module_shelf.hpp"

#include <utility>

namespace cubby {

Result<bool> ModuleShelf::load(const std::string& key, std::shared_ptr<const Entry> entry) {
  if (entry == nullptr || entry->kind != PayloadKind::cubin) return false;
  {
    std::lock_guard lock(mutex_);
    if (asked_.count(key) != 0 || loaded_.count(key) != 0) return false;
  }
  // Loaded outside the lock: a take() meanwhile is not kept waiting for the driver.
  try {
    Module module(std::move(entry));
    Result<CUcontext> context = current_context();
    if (!context.ok()) return context.error();
    std::lock_guard lock(mutex_);
    if (asked_.count(key) != 0 || loaded_.count(key) != 0) return false;  // unloaded here
    loaded_.emplace(key, Loaded{*context, std::move(module)});
    return true;
  } catch (const Error& error) {
    return Failure{error.code(), error.what()};
  }
}

CUmodule ModuleShelf::take(const std::string& key) noexcept {
  try {
    std::lock_guard lock(mutex_);
    asked_.insert(key);
    const auto found = loaded_.find(key);
    if (found == loaded_.end()) return nullptr;
    Result<CUcontext> context = current_context();
    if (!context.ok() || *context != found->second.context) return nullptr;
    CUmodule module = found->second.module.release();
    loaded_.erase(found);
    return module;
  } catch (...) {  // out of memory for the set: the caller loads the module itself
    return nullptr;
  }
}

bool ModuleShelf::asked_any() const {
  std::lock_guard lock(mutex_);
  return !asked_.empty();
}

std::size_t ModuleShelf::size() const {
  std::lock_guard lock(mutex_);
  return loaded_.size();
}

}  // namespace cubby
