// The C API (cubby.h): opaque handles over cubby::Cache and cubby::CacheResult. Every entry point
// catches every exception and records it as this thread's last error; nothing is thrown across
// the C boundary.
//
// A cubby_cache* is not a pointer to memory: its value is the id of an open cache in a registry,
// and ids are never reused. Every call on a handle is a Call, registered in the open cache while
// it runs; cubby_close removes the cache from the registry (later calls fail with
// CUBBY_ERROR_INVALID_ARGUMENT: "closed"), waits until its calls in flight have ended, then
// destroys it. So a close racing with calls on other threads is never a use-after-free.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cubby/cache.hpp"
#include "cubby/config.hpp"
#include "cubby/cubby.h"
#include "cubby/error.hpp"
#include "cubby/key.hpp"
#include "cubby/prefetch.hpp"
#include "cubby/stats_summary.hpp"
#include "cubby/version.hpp"
#include "format/blob.hpp"
#include "stats/stats_report.hpp"
#include "store/store.hpp"

struct cubby_result {
  cubby::CacheResult result;
  std::string key;  // 32 hex digits
  // The lowered-name map for access by index: the request's expressions in request order (first
  // occurrence of each), then any other expression of the entry in its sorted order.
  std::vector<std::pair<const std::string*, const std::string*>> names;
};

namespace {

thread_local std::string last_error;
thread_local std::string last_compile_log;
thread_local std::string stats_json;      // storage for cubby_stats_json's answer
thread_local std::string uncached_first;  // storage for cubby_uncached_first's answer
thread_local std::string explain_json;    // storage for cubby_explain_json's answer
thread_local std::string explain_text;    // storage for cubby_explain_text's answer

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

Registry& registry() {
  static Registry* const instance = new Registry;
  return *instance;
}

std::uintptr_t id_of(const cubby_cache* handle) { return reinterpret_cast<std::uintptr_t>(handle); }

cubby_status status_of(cubby::Errc code) noexcept {
  switch (code) {
    case cubby::Errc::io:
      return CUBBY_ERROR_IO;
    case cubby::Errc::corrupt:
      return CUBBY_ERROR_CORRUPT;
    case cubby::Errc::not_found:
      return CUBBY_ERROR_NOT_FOUND;
    case cubby::Errc::invalid_argument:
      return CUBBY_ERROR_INVALID_ARGUMENT;
    case cubby::Errc::compile_failed:
      return CUBBY_ERROR_COMPILE_FAILED;
    case cubby::Errc::nvrtc_unavailable:
      return CUBBY_ERROR_NVRTC_UNAVAILABLE;
    case cubby::Errc::driver_unavailable:
      return CUBBY_ERROR_DRIVER_UNAVAILABLE;
    case cubby::Errc::no_gpu:
      return CUBBY_ERROR_NO_GPU;
    case cubby::Errc::cuda_error:
      return CUBBY_ERROR_CUDA;
    case cubby::Errc::name_not_found:
      return CUBBY_ERROR_NAME_NOT_FOUND;
  }
  return CUBBY_ERROR_INTERNAL;
}

// Records a failure as this thread's last error and returns its status. `compile_log` is the
// failure's compile log (cubby::Error::log) when it is a compile failure, else null: a compile
// failure without one (NVRTC ran out of memory, gave no payload) has its whole message as its
// log. Never throws.
int record(cubby_status status, const char* message,
           const std::string* compile_log = nullptr) noexcept {
  try {
    last_error = message;
    if (compile_log == nullptr) {
      last_compile_log.clear();
    } else {
      last_compile_log = compile_log->empty() ? last_error : *compile_log;
    }
  } catch (...) {
    // Out of memory while copying the message: keep whatever was there.
  }
  return status;
}

// The status of the exception in flight, recorded as the last error. Call only from a catch block.
int record_current_exception() noexcept {
  try {
    throw;
  } catch (const cubby::Error& error) {
    return record(status_of(error.code()), error.what(),
                  error.code() == cubby::Errc::compile_failed ? &error.log() : nullptr);
  } catch (const std::bad_alloc&) {
    return record(CUBBY_ERROR_INTERNAL, "cubby ran out of memory; free memory and try again");
  } catch (const std::exception& error) {
    std::string message = "internal error in cubby: ";
    try {
      message += error.what();
      message += " (please report this)";
    } catch (...) {
    }
    return record(CUBBY_ERROR_INTERNAL, message.c_str());
  } catch (...) {
    return record(CUBBY_ERROR_INTERNAL,
                  "internal error in cubby: unknown exception (please report this)");
  }
}

int invalid(const char* message) noexcept { return record(CUBBY_ERROR_INVALID_ARGUMENT, message); }

// One call of `function` on a handle. While a Call on an open cache exists, cubby_close of that
// cache waits; the cache is valid until the Call ends. A NULL or closed handle gives a Call without
// a cache, with CUBBY_ERROR_INVALID_ARGUMENT recorded as the last error.
class Call {
 public:
  Call(cubby_cache* handle, const char* function) noexcept {
    if (handle == nullptr) {
      status_ = refuse(function, ": cache is NULL; open one with cubby_open");
      return;
    }
    try {
      const std::lock_guard lock(registry().mutex);
      const auto found = registry().open.find(id_of(handle));
      if (found != registry().open.end()) {
        open_ = found->second.get();
        ++open_->calls;
        return;
      }
    } catch (...) {
      status_ = record_current_exception();
      return;
    }
    status_ = refuse(function,
                     ": cache is closed (or was never returned by cubby_open); do not use a "
                     "handle after cubby_close, open a new one with cubby_open");
  }

  ~Call() {
    if (open_ == nullptr) return;
    const std::lock_guard lock(registry().mutex);
    if (--open_->calls == 0 && open_->closing) registry().calls_ended.notify_all();
  }

  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  explicit operator bool() const { return open_ != nullptr; }
  // The failure recorded when there is no cache.
  int status() const { return status_; }
  OpenCache& open() const { return *open_; }
  cubby::Cache& cache() const { return *open_->cache; }

 private:
  static int refuse(const char* function, const char* problem) noexcept {
    try {
      return invalid((std::string(function) + problem).c_str());
    } catch (...) {
      return invalid(problem);
    }
  }

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

// Builds a CompileRequest from C arguments; throws cubby::Error(invalid_argument) on bad ones.
cubby::CompileRequest make_request(const char* source, const char* program_name,
                                   const char* const* name_expressions,
                                   size_t name_expression_count, const char* const* options,
                                   size_t option_count, const char* arch) {
  using cubby::Errc;
  if (source == nullptr)
    throw cubby::Error(Errc::invalid_argument, "source is NULL; pass the program text");
  if (name_expressions == nullptr && name_expression_count != 0) {
    throw cubby::Error(Errc::invalid_argument,
                       "name_expressions is NULL but name_expression_count is not 0; pass an array "
                       "or a count of 0");
  }
  if (options == nullptr && option_count != 0) {
    throw cubby::Error(Errc::invalid_argument,
                       "options is NULL but option_count is not 0; pass an array or a count of 0");
  }
  cubby::CompileRequest request;
  request.source = source;
  if (program_name != nullptr) request.program_name = program_name;
  if (arch != nullptr) request.arch = arch;
  for (size_t i = 0; i < name_expression_count; ++i) {
    if (name_expressions[i] == nullptr) {
      throw cubby::Error(Errc::invalid_argument,
                         "name_expressions[" + std::to_string(i) +
                             "] is NULL; every name expression must be a string");
    }
    request.name_expressions.emplace_back(name_expressions[i]);
  }
  for (size_t i = 0; i < option_count; ++i) {
    if (options[i] == nullptr) {
      throw cubby::Error(Errc::invalid_argument, "options[" + std::to_string(i) +
                                                     "] is NULL; every option must be a string");
    }
    request.options.emplace_back(options[i]);
  }
  return request;
}

// A result handle over `result`, with its lowered-name map indexed in the order of `requested`
// (the request's name expressions; duplicates and expressions the entry lacks are left out), then
// the entry's other expressions in their sorted order.
std::unique_ptr<cubby_result> make_result(cubby::CacheResult result,
                                          const std::vector<std::string>& requested = {}) {
  auto handle = std::make_unique<cubby_result>();
  handle->result = std::move(result);
  handle->key = handle->result.key.hex();
  const auto& lowered_names = handle->result.entry->lowered_names;
  handle->names.reserve(lowered_names.size());
  std::set<std::string_view> placed;
  for (const std::string& expression : requested) {
    const auto found = lowered_names.find(expression);
    if (found == lowered_names.end() || !placed.insert(found->first).second) continue;
    handle->names.emplace_back(&found->first, &found->second);
  }
  for (const auto& [expression, lowered] : lowered_names) {
    if (!placed.contains(expression)) handle->names.emplace_back(&expression, &lowered);
  }
  return handle;
}

}  // namespace

extern "C" {

const char* cubby_version(void) { return cubby::kVersion; }

const char* cubby_last_error(void) { return last_error.c_str(); }

const char* cubby_last_compile_log(void) { return last_compile_log.c_str(); }

int cubby_open(const char* dir, cubby_cache** out) {
  if (out == nullptr) return invalid("cubby_open: out is NULL; pass the address of a cubby_cache*");
  *out = nullptr;
  return guarded([&]() -> int {
    if (dir != nullptr && *dir == '\0')
      return invalid("cubby_open: dir is empty; pass a folder or NULL for the default");
    // The store's settings: variables, then its cubby.conf, then defaults.
    cubby::Config config = cubby::Config::load(dir == nullptr ? "" : dir).value_or_throw();
    auto open = std::make_unique<OpenCache>();
    open->dir = config.dir.string();
    open->cache = std::make_unique<cubby::Cache>(std::move(config));
    const std::lock_guard lock(registry().mutex);
    const std::uintptr_t id = registry().next_id++;
    registry().open.emplace(id, std::move(open));
    *out = reinterpret_cast<cubby_cache*>(id);
    return CUBBY_OK;
  });
}

void cubby_close(cubby_cache* cache) {
  if (cache == nullptr) return;
  std::unique_ptr<OpenCache> open;
  {
    std::unique_lock lock(registry().mutex);
    const auto found = registry().open.find(id_of(cache));
    if (found == registry().open.end()) return;  // closed already
    open = std::move(found->second);
    registry().open.erase(found);
    open->closing = true;
    registry().calls_ended.wait(lock, [&] { return open->calls == 0; });
  }
  // Destroyed outside the lock: ~Cache drains background work and reports stats.
  open.reset();
}

int cubby_compile(cubby_cache* cache, const char* source, const char* program_name,
                  const char* const* name_expressions, size_t name_expression_count,
                  const char* const* options, size_t option_count, const char* arch,
                  cubby_result** out) {
  if (out == nullptr)
    return invalid("cubby_compile: out is NULL; pass the address of a cubby_result*");
  *out = nullptr;
  return with_cache(cache, "cubby_compile", [&](const Call& call) -> int {
    const cubby::CompileRequest request = make_request(
        source, program_name, name_expressions, name_expression_count, options, option_count, arch);
    *out = make_result(call.cache().compile(request), request.name_expressions).release();
    return CUBBY_OK;
  });
}

int cubby_key(cubby_cache* cache, const char* source, const char* program_name,
              const char* const* name_expressions, size_t name_expression_count,
              const char* const* options, size_t option_count, const char* arch, char key_out[33]) {
  if (key_out == nullptr) return invalid("cubby_key: key_out is NULL; pass a buffer of 33 chars");
  key_out[0] = '\0';
  return with_cache(cache, "cubby_key", [&](const Call& call) -> int {
    const cubby::CompileRequest request = make_request(
        source, program_name, name_expressions, name_expression_count, options, option_count, arch);
    const std::string hex = call.cache().key_of(request).hex();
    if (hex.size() != 32) {
      return record(CUBBY_ERROR_INTERNAL,
                    "internal error in cubby: a key is not 32 hex digits (please report this)");
    }
    std::memcpy(key_out, hex.c_str(), hex.size() + 1);
    return CUBBY_OK;
  });
}

void cubby_result_free(cubby_result* result) { delete result; }

const char* cubby_result_key(const cubby_result* result) {
  return result == nullptr ? nullptr : result->key.c_str();
}

int cubby_result_hit(const cubby_result* result) {
  return result != nullptr && result->result.hit ? 1 : 0;
}

const char* cubby_result_tier(const cubby_result* result) {
  return result == nullptr ? nullptr : cubby::source_name(result->result.tier);
}

const char* cubby_result_payload_kind(const cubby_result* result) {
  return result == nullptr ? nullptr : cubby::payload_kind_name(result->result.entry->kind);
}

const void* cubby_result_payload(const cubby_result* result, size_t* size) {
  if (result == nullptr) {
    if (size != nullptr) *size = 0;
    return nullptr;
  }
  const std::string& payload = result->result.entry->payload;
  if (size != nullptr) *size = payload.size();
  return payload.data();
}

size_t cubby_result_name_count(const cubby_result* result) {
  return result == nullptr ? 0 : result->names.size();
}

const char* cubby_result_name_expression(const cubby_result* result, size_t index) {
  if (result == nullptr || index >= result->names.size()) return nullptr;
  return result->names[index].first->c_str();
}

const char* cubby_result_lowered_name(const cubby_result* result, size_t index) {
  if (result == nullptr || index >= result->names.size()) return nullptr;
  return result->names[index].second->c_str();
}

const char* cubby_result_lowered_name_of(const cubby_result* result, const char* name_expression) {
  if (result == nullptr || name_expression == nullptr) return nullptr;
  try {
    const auto& names = result->result.entry->lowered_names;
    const auto found = names.find(std::string(name_expression));
    return found == names.end() ? nullptr : found->second.c_str();
  } catch (...) {
    record_current_exception();
    return nullptr;
  }
}

const char* cubby_result_log(const cubby_result* result) {
  return result == nullptr ? nullptr : result->result.entry->log.c_str();
}

double cubby_result_compile_ms(const cubby_result* result) {
  return result == nullptr ? 0.0 : static_cast<double>(result->result.entry->compile_us) / 1000.0;
}

double cubby_result_elapsed_ms(const cubby_result* result) {
  return result == nullptr ? 0.0 : result->result.elapsed_ms;
}

const char* cubby_result_uncached(const cubby_result* result) {
  if (result == nullptr) return nullptr;
  return result->result.uncached == cubby::Uncached::none
             ? ""
             : cubby::uncached_info(result->result.uncached).name.data();
}

const char* cubby_result_uncached_detail(const cubby_result* result) {
  return result == nullptr ? nullptr : result->result.uncached_detail.c_str();
}

void cubby_result_get_fields(const cubby_result* result, cubby_result_fields* fields) {
  if (result == nullptr || fields == nullptr) return;
  cubby_result_fields all{};
  all.key = cubby_result_key(result);
  all.hit = cubby_result_hit(result);
  all.tier = cubby_result_tier(result);
  all.payload_kind = cubby_result_payload_kind(result);
  all.payload = cubby_result_payload(result, &all.payload_size);
  all.name_count = cubby_result_name_count(result);
  all.log = cubby_result_log(result);
  all.compile_ms = cubby_result_compile_ms(result);
  all.elapsed_ms = cubby_result_elapsed_ms(result);
  all.uncached = cubby_result_uncached(result);
  all.uncached_detail = cubby_result_uncached_detail(result);
  const std::size_t size = std::min(fields->size, sizeof all);
  all.size = size;
  std::memcpy(static_cast<void*>(fields), &all, size);
}

const char* cubby_stats_json(cubby_cache* cache) {
  return text_with_cache(cache, "cubby_stats_json", [](const Call& call) {
    const cubby::Stats stats = call.cache().stats();
    nlohmann::json document = cubby::stats_to_json(stats);
    document[cubby::kUncachedFirstMember] =
        cubby::uncached_first_to_json(stats, cubby::uncached_details());
    stats_json = cubby::json_text(document);
    return stats_json.c_str();
  });
}

size_t cubby_uncached_count(void) { return cubby::kUncached.size(); }

// kUncached's strings are literals: NUL-terminated, living as long as the library.
const char* cubby_uncached_name(size_t index) {
  return index < cubby::kUncached.size() ? cubby::kUncached[index].name.data() : nullptr;
}

const char* cubby_uncached_label(size_t index) {
  return index < cubby::kUncached.size() ? cubby::kUncached[index].label.data() : nullptr;
}

const char* cubby_uncached_what(size_t index) {
  return index < cubby::kUncached.size() ? cubby::kUncached[index].what.data() : nullptr;
}

const char* cubby_uncached_first(const char* reason) {
  try {
    const cubby::Uncached found = cubby::uncached_by_name(reason == nullptr ? "" : reason);
    if (found == cubby::Uncached::none) {
      throw cubby::Error(cubby::Errc::invalid_argument,
                         std::string("cubby_uncached_first: '") +
                             (reason == nullptr ? "" : reason) +
                             "' is no reason; pass a name cubby_uncached_name gives");
    }
    uncached_first = cubby::uncached_details()[static_cast<std::size_t>(found)];
    return uncached_first.c_str();
  } catch (...) {
    record_current_exception();
    return nullptr;
  }
}

int cubby_count_uncached(cubby_cache* cache, const char* reason, const char* detail) {
  return with_cache(cache, "cubby_count_uncached", [&](const Call& call) -> int {
    const cubby::Uncached found = cubby::uncached_by_name(reason == nullptr ? "" : reason);
    if (found == cubby::Uncached::none) {
      const std::string message = std::string("cubby_count_uncached: '") +
                                  (reason == nullptr ? "" : reason) +
                                  "' is no reason; pass a name cubby_uncached_name gives";
      return invalid(message.c_str());
    }
    call.cache().count_uncached(found, detail == nullptr ? "" : detail);
    return CUBBY_OK;
  });
}

const char* cubby_store_dir(cubby_cache* cache) {
  return text_with_cache(cache, "cubby_store_dir",
                         [](const Call& call) { return call.open().dir.c_str(); });
}

int cubby_store_usage(cubby_cache* cache, uint64_t* entries, uint64_t* bytes) {
  if (entries != nullptr) *entries = 0;
  if (bytes != nullptr) *bytes = 0;
  return with_cache(cache, "cubby_store_usage", [&](const Call& call) -> int {
    const cubby::StoreUsage usage =
        cubby::Store(call.cache().config().dir).usage().value_or_throw();
    if (entries != nullptr) *entries = usage.entries;
    if (bytes != nullptr) *bytes = usage.bytes;
    return CUBBY_OK;
  });
}

int cubby_store_estimate(cubby_cache* cache, uint64_t* entries, uint64_t* bytes) {
  if (entries != nullptr) *entries = 0;
  if (bytes != nullptr) *bytes = 0;
  return with_cache(cache, "cubby_store_estimate", [&](const Call& call) -> int {
    const cubby::StoreUsage estimate =
        cubby::Store(call.cache().config().dir).estimate().value_or_throw();
    if (entries != nullptr) *entries = estimate.entries;
    if (bytes != nullptr) *bytes = estimate.bytes;
    return CUBBY_OK;
  });
}

int cubby_clear(cubby_cache* cache, uint64_t* removed) {
  if (removed != nullptr) *removed = 0;
  return with_cache(cache, "cubby_clear", [&](const Call& call) -> int {
    const uint64_t count = call.cache().clear_store();
    if (removed != nullptr) *removed = count;
    return CUBBY_OK;
  });
}

const char* cubby_explain_json(cubby_cache* cache, const char* source, const char* program_name,
                               const char* const* name_expressions, size_t name_expression_count,
                               const char* const* options, size_t option_count, const char* arch) {
  return text_with_cache(cache, "cubby_explain_json", [&](const Call& call) {
    const cubby::CompileRequest request = make_request(
        source, program_name, name_expressions, name_expression_count, options, option_count, arch);
    nlohmann::json fields = nlohmann::json::array();
    for (const cubby::KeyField& field : cubby::explain_key(call.cache().key_inputs(request))) {
      fields.push_back({{"label", field.label}, {"summary", field.summary}, {"hash", field.hash}});
    }
    explain_json = cubby::json_text(fields);
    return explain_json.c_str();
  });
}

const char* cubby_explain_text(cubby_cache* cache, const char* source, const char* program_name,
                               const char* const* name_expressions, size_t name_expression_count,
                               const char* const* options, size_t option_count, const char* arch) {
  return text_with_cache(cache, "cubby_explain_text", [&](const Call& call) {
    const cubby::CompileRequest request = make_request(
        source, program_name, name_expressions, name_expression_count, options, option_count, arch);
    explain_text = cubby::format_key_fields(cubby::explain_key(call.cache().key_inputs(request)));
    return explain_text.c_str();
  });
}

namespace {

// cubby_blob_get and cubby_blob_get_or_claim (`claim_wait`, with `claimed` set when given).
int blob_get(const char* function, cubby_cache* cache, const char* ns, const char* name,
             std::optional<std::chrono::milliseconds> claim_wait, cubby_result** out,
             int* claimed) {
  if (out == nullptr) {
    return invalid(
        (std::string(function) + ": out is NULL; pass the address of a cubby_result*").c_str());
  }
  *out = nullptr;
  if (claimed != nullptr) *claimed = 0;
  return with_cache(cache, function, [&](const Call& call) -> int {
    if (ns == nullptr || name == nullptr) {
      return invalid(
          (std::string(function) + ": ns or name is NULL; pass a namespace and a name").c_str());
    }
    auto result = claim_wait ? call.cache().load_or_claim_blob(ns, name, *claim_wait)
                             : call.cache().load_blob(ns, name);
    if (result) {
      *out = make_result(std::move(*result)).release();
    } else if (claimed != nullptr) {
      *claimed = call.cache().holds_blob_claim(ns, name) ? 1 : 0;
    }
    return CUBBY_OK;
  });
}

}  // namespace

int cubby_blob_get(cubby_cache* cache, const char* ns, const char* name, cubby_result** out) {
  return blob_get("cubby_blob_get", cache, ns, name, std::nullopt, out, nullptr);
}

int cubby_blob_get_or_claim(cubby_cache* cache, const char* ns, const char* name, unsigned wait_ms,
                            cubby_result** out, int* claimed) {
  return blob_get("cubby_blob_get_or_claim", cache, ns, name, std::chrono::milliseconds(wait_ms),
                  out, claimed);
}

int cubby_blob_release(cubby_cache* cache, const char* ns, const char* name) {
  return with_cache(cache, "cubby_blob_release", [&](const Call& call) -> int {
    if (ns == nullptr || name == nullptr) {
      return invalid("cubby_blob_release: ns or name is NULL; pass a namespace and a name");
    }
    call.cache().release_blob_claim(ns, name);
    return CUBBY_OK;
  });
}

int cubby_blob_remove(cubby_cache* cache, const char* ns, const char* name, int* removed) {
  return with_cache(cache, "cubby_blob_remove", [&](const Call& call) -> int {
    if (ns == nullptr || name == nullptr) {
      return invalid("cubby_blob_remove: ns or name is NULL; pass a namespace and a name");
    }
    const bool gone = call.cache().remove_blob(ns, name);
    if (removed != nullptr) *removed = gone ? 1 : 0;
    return CUBBY_OK;
  });
}

int cubby_namespace_usage(cubby_cache* cache, const char* ns, uint64_t* entries, uint64_t* bytes) {
  if (entries != nullptr) *entries = 0;
  if (bytes != nullptr) *bytes = 0;
  return with_cache(cache, "cubby_namespace_usage", [&](const Call& call) -> int {
    if (ns == nullptr) return invalid("cubby_namespace_usage: ns is NULL; pass a namespace");
    cubby::check_namespace(ns).value_or_throw();
    if (call.cache().config().disabled) return CUBBY_OK;
    const cubby::StoreUsage usage =
        cubby::Store(call.cache().config().dir).namespace_usage(ns).value_or_throw();
    if (entries != nullptr) *entries = usage.entries;
    if (bytes != nullptr) *bytes = usage.bytes;
    return CUBBY_OK;
  });
}

int cubby_namespace_clear(cubby_cache* cache, const char* ns, uint64_t* removed) {
  if (removed != nullptr) *removed = 0;
  return with_cache(cache, "cubby_namespace_clear", [&](const Call& call) -> int {
    if (ns == nullptr) return invalid("cubby_namespace_clear: ns is NULL; pass a namespace");
    const uint64_t count = call.cache().remove_namespace(ns);
    if (removed != nullptr) *removed = count;
    return CUBBY_OK;
  });
}

int cubby_blob_put(cubby_cache* cache, const char* ns, const char* name, const void* data,
                   size_t size, double compile_ms) {
  return with_cache(cache, "cubby_blob_put", [&](const Call& call) -> int {
    if (ns == nullptr || name == nullptr)
      return invalid("cubby_blob_put: ns or name is NULL; pass a namespace and a name");
    if (data == nullptr && size != 0)
      return invalid("cubby_blob_put: data is NULL but size is not 0; pass the payload");
    const std::string_view payload =
        size == 0 ? std::string_view() : std::string_view(static_cast<const char*>(data), size);
    (void)call.cache().store_blob(ns, name, payload, compile_ms);
    return CUBBY_OK;
  });
}

struct cubby_prefetch {
  cubby::Prefetch prefetch;
};

int cubby_prefetch_start(const char* dir, const char* suite, cubby_prefetch** out) {
  if (out == nullptr) {
    return invalid("cubby_prefetch_start: out is NULL; pass the address of a cubby_prefetch*");
  }
  *out = nullptr;
  if (suite == nullptr || *suite == '\0') {
    return invalid("cubby_prefetch_start: suite is empty; name the suite whose recipes to warm");
  }
  return guarded([&]() -> int {
    cubby::Config config = cubby::Config::load(dir == nullptr ? "" : dir).value_or_throw();
    config.suite = suite;
    auto handle = std::make_unique<cubby_prefetch>();
    handle->prefetch.start(config);
    *out = handle.release();
    return CUBBY_OK;
  });
}

long cubby_prefetch_pid(const cubby_prefetch* prefetch) {
  return prefetch == nullptr ? 0 : prefetch->prefetch.pid();
}

const char* cubby_prefetch_note(const cubby_prefetch* prefetch) {
  return prefetch == nullptr ? "" : prefetch->prefetch.note().c_str();
}

void cubby_prefetch_stop(cubby_prefetch* prefetch) { delete prefetch; }

}  // extern "C"

// The end-of-run summary (stats/stats_summary): the pytest plugin prints these lines.
namespace {
thread_local std::string stats_summary;  // storage for cubby_stats_summary's answer
}  // namespace

extern "C" const char* cubby_stats_summary(const char* stats_json) {
  if (stats_json == nullptr) {
    invalid(
        "cubby_stats_summary: stats_json is NULL; pass a JSON object of counters as "
        "cubby_stats_json writes it");
    return nullptr;
  }
  return text_guarded([&]() -> const char* {
    const nlohmann::json document = nlohmann::json::parse(stats_json, nullptr, false);
    if (document.is_discarded()) {
      throw cubby::Error(cubby::Errc::invalid_argument,
                         "cubby_stats_summary: stats_json is not JSON; pass an object of counters "
                         "as cubby_stats_json writes it");
    }
    stats_summary.clear();
    for (const std::string& line : cubby::summary_lines(
             cubby::stats_from_json(document), cubby::uncached_first_from_json(document))) {
      if (!stats_summary.empty()) stats_summary += '\n';
      stats_summary += line;
    }
    return stats_summary.c_str();
  });
}
