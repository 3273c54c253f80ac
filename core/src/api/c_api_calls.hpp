// What every entry point of the C API (c_api*.cpp) runs through: the registry of open caches
// (a cubby_cache* is the id of an OpenCache in it, never a pointer; ids are never reused), the
// Call that keeps a cache open while it runs (cubby_close waits for the calls in flight), and the
// one wrapper, guarded(), that turns any exception into a status and this thread's last error.
// Nothing is thrown across the C boundary.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cubby/cache.hpp"
#include "cubby/cubby.h"
#include "cubby/error.hpp"

namespace cubby::c_api {

// An open cache: what a cubby_cache handle names while it is open.
struct OpenCache {
  std::unique_ptr<cubby::Cache> cache;
  std::string dir;        // the store folder, for cubby_store_dir
  std::size_t calls = 0;  // calls in flight (guarded by Registry::mutex)
  bool closing = false;   // cubby_close is waiting for `calls` to reach 0 (guarded likewise)
};

// The open caches by handle id. Never destroyed, so handles may be closed from static destructors
// and atexit handlers of other libraries.
struct Registry {
  std::mutex mutex;
  std::condition_variable calls_ended;  // a closing cache's last call has ended
  std::unordered_map<std::uintptr_t, std::unique_ptr<OpenCache>> open;
  std::uintptr_t next_id = 1;  // never reused: a closed handle is never mistaken for a later one
};

// The one registry (never destroyed).
Registry& registry();

// The id a handle stands for.
std::uintptr_t id_of(const cubby_cache* handle);

// The C status of an error code.
cubby_status status_of(cubby::Errc code) noexcept;

// Records a failure as this thread's last error and returns its status. `compile_log` is the
// failure's compile log (cubby::Error::log) when it is a compile failure, else null: a compile
// failure without one (NVRTC ran out of memory, gave no payload) has its whole message as its
// log. Never throws.
int record(cubby_status status, const char* message,
           const std::string* compile_log = nullptr) noexcept;

// The status of the exception in flight, recorded as the last error. Call only from a catch block.
int record_current_exception() noexcept;

// record() of CUBBY_ERROR_INVALID_ARGUMENT with `message`.
int invalid(const char* message) noexcept;

// One call of `function` on a handle. While a Call on an open cache exists, cubby_close of that
// cache waits; the cache is valid until the Call ends. A NULL or closed handle gives a Call without
// a cache, with CUBBY_ERROR_INVALID_ARGUMENT recorded as the last error.
class Call {
 public:
  Call(cubby_cache* handle, const char* function) noexcept;
  ~Call();

  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  explicit operator bool() const { return open_ != nullptr; }
  // The failure recorded when there is no cache.
  int status() const { return status_; }
  OpenCache& open() const { return *open_; }
  cubby::Cache& cache() const { return *open_->cache; }

 private:
  static int refuse(const char* function, const char* problem) noexcept;

  OpenCache* open_ = nullptr;
  int status_ = CUBBY_OK;
};

// The one way an entry point runs its work: `body()`'s status, or, when it throws, the status of
// the exception, recorded as the last error. Nothing is thrown across the C boundary.
template <class Body>
int guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return record_current_exception();
  }
}

// guarded() as one Call of `function` on `handle`: CUBBY_ERROR_INVALID_ARGUMENT for a NULL or
// closed handle, else `body(call)`'s status.
template <class Body>
int with_cache(cubby_cache* handle, const char* function, Body&& body) noexcept {
  const Call call(handle, function);
  if (!call) return call.status();
  return guarded([&]() -> int { return body(call); });
}

// guarded() for an entry point that answers text: `body()`'s, or NULL when it throws (the failure
// recorded as the last error).
template <class Body>
const char* text_guarded(Body&& body) noexcept {
  const char* text = nullptr;
  const int status = guarded([&]() -> int {
    text = body();
    return CUBBY_OK;
  });
  return status == CUBBY_OK ? text : nullptr;
}

// with_cache for an entry point that answers text: `body(call)`'s, or NULL on any failure.
template <class Body>
const char* text_with_cache(cubby_cache* handle, const char* function, Body&& body) noexcept {
  const char* text = nullptr;
  const int status = with_cache(handle, function, [&](const Call& call) -> int {
    text = body(call);
    return CUBBY_OK;
  });
  return status == CUBBY_OK ? text : nullptr;
}

}  // namespace cubby::c_api
