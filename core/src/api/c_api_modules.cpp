// The C API's modules loaded ahead (cubby.h: cubby_preload_modules, cubby_take_module): the
// suite's entries read ahead, loaded on the GPU by the thread that read them, kept in the handle's
// ModuleShelf until the thread that needs one takes it.
#include <cstdint>
#include <memory>
#include <string>

#include "api/c_api_calls.hpp"
#include "cubby/driver.hpp"

using cubby::c_api::Call;
using cubby::c_api::invalid;
using cubby::c_api::with_cache;

int cubby_preload_modules(cubby_cache* cache, const volatile int* stop, uint64_t* loaded) {
  if (loaded != nullptr) *loaded = 0;
  return with_cache(cache, "cubby_preload_modules", [&](const Call& call) -> int {
    cubby::ensure_context().value_or_throw();
    std::uint64_t count = 0;
    std::unique_ptr<cubby::Failure> refused;
    // The caller sets *stop from another thread: read atomically. A refusal ends the walk, and
    // so does the first module asked for: the driver serializes a module load with the context's
    // other calls, so loads beside a thread that runs kernels slow it down (measured on the H200:
    // 0.4 s more per warm run of CuPy's test files, with less CPU on its main thread).
    cubby::ModuleShelf& modules = call.open().modules;
    call.cache().read_ahead_suite(
        [stop, &refused, &modules] {
          return refused != nullptr || modules.asked_any() ||
                 (stop != nullptr && __atomic_load_n(stop, __ATOMIC_RELAXED) != 0);
        },
        [&](const cubby::Key& key, const std::shared_ptr<const cubby::Entry>& entry) {
          if (refused != nullptr) return;
          cubby::Result<bool> done = modules.load(key.hex(), entry);
          if (!done.ok()) {
            refused = std::make_unique<cubby::Failure>(done.error());
          } else if (*done) {
            ++count;
          }
        });
    if (loaded != nullptr) *loaded = count;
    if (refused != nullptr) throw cubby::Error(*refused);
    return CUBBY_OK;
  });
}

int cubby_take_module(cubby_cache* cache, const char* key, void** module) {
  if (module == nullptr) {
    return invalid("cubby_take_module: module is NULL; pass the address of a CUmodule");
  }
  *module = nullptr;
  if (key == nullptr) return invalid("cubby_take_module: key is NULL; pass a result's key");
  return with_cache(cache, "cubby_take_module", [&](const Call& call) -> int {
    *module = call.open().modules.take(key);
    return CUBBY_OK;
  });
}
