#include "cubby/testing/kernel_test.hpp"

#include <map>

#include "cubby/testing/session.hpp"

namespace cubby::testing {
namespace {

// The modules of this process, by key: compiled (or fetched) once, shared by every test.
struct ModuleRegistry {
  std::mutex mutex;
  std::map<Key, std::shared_ptr<KernelModule>> modules;
};

// Never destroyed: modules are released by Environment::TearDown, while the driver is alive.
ModuleRegistry& registry() {
  static ModuleRegistry* const instance = new ModuleRegistry;
  return *instance;
}

}  // namespace

const Module& KernelModule::module() const {
  std::call_once(load_once_, [&] { module_ = std::make_unique<Module>(result_.entry); });
  return *module_;
}

CUfunction KernelModule::function(std::string_view name_expression) const {
  return module().function(name_expression);
}

std::shared_ptr<const KernelModule> KernelTest::compile(std::string source,
                                                        std::vector<std::string> name_expressions,
                                                        std::vector<std::string> options) {
  CompileRequest request;
  request.source = std::move(source);
  request.name_expressions = std::move(name_expressions);
  request.options = std::move(options);
  return compile(request);
}

std::shared_ptr<const KernelModule> KernelTest::compile(const CompileRequest& request) {
  // Every call goes through the cache (a memory hit after the first), so each test's properties
  // show what it used; the module object itself is shared.
  CacheResult result = testing::compile(request);
  ModuleRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  auto [it, inserted] = r.modules.try_emplace(result.key);
  if (inserted) it->second = std::make_shared<KernelModule>(std::move(result));
  return it->second;
}

bool KernelTest::has_gpu() { return !gpu_skip_reason().has_value(); }

void KernelTest::release_modules() {
  ModuleRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  r.modules.clear();
}

void GpuKernelTest::SetUp() {
  if (const auto reason = gpu_skip_reason()) GTEST_SKIP() << *reason;
}

}  // namespace cubby::testing
