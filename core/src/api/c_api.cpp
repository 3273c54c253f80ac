// The C API (cubby.h): opaque handles over cubby::Cache and cubby::CacheResult. Every entry point
// runs its work through c_api_calls.hpp (guarded / with_cache): it catches every exception and
// records it as this thread's last error; nothing is thrown across the C boundary. Here: opening
// and closing caches, compiles and keys, counters, the store's usage, key explanations. The
// result handle's accessors: c_api_result.cpp; blobs and namespaces: c_api_blob.cpp; prefetch:
// c_api_prefetch.cpp.
//
// A cubby_cache* is not a pointer to memory: its value is the id of an open cache in a registry,
// and ids are never reused. Every call on a handle is a Call, registered in the open cache while
// it runs; cubby_close removes the cache from the registry (later calls fail with
// CUBBY_ERROR_INVALID_ARGUMENT: "closed"), waits until its calls in flight have ended, then
// destroys it. So a close racing with calls on other threads is never a use-after-free.
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/c_api_calls.hpp"
#include "api/c_api_result.hpp"
#include "cubby/cache.hpp"
#include "cubby/config.hpp"
#include "cubby/cubby.h"
#include "cubby/error.hpp"
#include "cubby/key.hpp"
#include "cubby/stats_summary.hpp"
#include "cubby/version.hpp"
#include "stats/stats_report.hpp"
#include "storage/local/manifests.hpp"
#include "store/nearest_recipe.hpp"
#include "store/store.hpp"

using cubby::c_api::Call;
using cubby::c_api::guarded;
using cubby::c_api::id_of;
using cubby::c_api::invalid;
using cubby::c_api::make_result;
using cubby::c_api::OpenCache;
using cubby::c_api::record;
using cubby::c_api::record_current_exception;
using cubby::c_api::registry;
using cubby::c_api::text_guarded;
using cubby::c_api::text_with_cache;
using cubby::c_api::with_cache;

namespace {

thread_local std::string stats_json;      // storage for cubby_stats_json's answer
thread_local std::string uncached_first;  // storage for cubby_uncached_first's answer
thread_local std::string explain_json;    // storage for cubby_explain_json's answer
thread_local std::string explain_text;    // storage for cubby_explain_text's answer
thread_local std::string nearest_json;    // storage for cubby_nearest_recorded_json's answer
thread_local std::string stats_summary;   // storage for cubby_stats_summary's answer

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

}  // namespace

extern "C" {

const char* cubby_version(void) { return cubby::kVersion; }

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

namespace {

// cubby_key and cubby_storable_key: `key_of(request)` written to key_out.
int write_key(
    cubby_cache* cache, const char* function, const char* source, const char* program_name,
    const char* const* name_expressions, size_t name_expression_count, const char* const* options,
    size_t option_count, const char* arch, char key_out[33],
    const std::function<cubby::Key(const cubby::Cache&, const cubby::CompileRequest&)>& key_of) {
  if (key_out == nullptr) {
    return invalid(
        (std::string(function) + ": key_out is NULL; pass a buffer of 33 chars").c_str());
  }
  key_out[0] = '\0';
  return with_cache(cache, function, [&](const Call& call) -> int {
    const cubby::CompileRequest request = make_request(
        source, program_name, name_expressions, name_expression_count, options, option_count, arch);
    const std::string hex = key_of(call.cache(), request).hex();
    if (hex.size() != 32) {
      return record(CUBBY_ERROR_INTERNAL,
                    "internal error in cubby: a key is not 32 hex digits (please report this)");
    }
    std::memcpy(key_out, hex.c_str(), hex.size() + 1);
    return CUBBY_OK;
  });
}

}  // namespace

int cubby_key(cubby_cache* cache, const char* source, const char* program_name,
              const char* const* name_expressions, size_t name_expression_count,
              const char* const* options, size_t option_count, const char* arch, char key_out[33]) {
  return write_key(
      cache, "cubby_key", source, program_name, name_expressions, name_expression_count, options,
      option_count, arch, key_out,
      [](const cubby::Cache& c, const cubby::CompileRequest& r) { return c.key_of(r); });
}

int cubby_storable_key(cubby_cache* cache, const char* source, const char* program_name,
                       const char* const* name_expressions, size_t name_expression_count,
                       const char* const* options, size_t option_count, const char* arch,
                       char key_out[33]) {
  return write_key(cache, "cubby_storable_key", source, program_name, name_expressions,
                   name_expression_count, options, option_count, arch, key_out,
                   [](const cubby::Cache& c, const cubby::CompileRequest& r) {
                     return c.storable_key(r).value_or_throw();
                   });
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

int cubby_read_ahead(cubby_cache* cache, const volatile int* stop, uint64_t* count,
                     uint64_t* lacking) {
  if (count != nullptr) *count = 0;
  if (lacking != nullptr) *lacking = UINT64_MAX;
  return with_cache(cache, "cubby_read_ahead", [&](const Call& call) -> int {
    // The caller sets *stop from another thread: read atomically.
    const cubby::Cache::ReadAhead done = call.cache().read_ahead_suite(
        [stop] { return stop != nullptr && __atomic_load_n(stop, __ATOMIC_RELAXED) != 0; });
    if (count != nullptr) *count = done.read;
    if (lacking != nullptr) {
      *lacking = done.lacking == cubby::Cache::ReadAhead::kUnknown ? UINT64_MAX : done.lacking;
    }
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

const char* cubby_nearest_recorded_json(cubby_cache* cache, const char* source,
                                        const char* program_name,
                                        const char* const* name_expressions,
                                        size_t name_expression_count, const char* const* options,
                                        size_t option_count, const char* arch) {
  return text_with_cache(cache, "cubby_nearest_recorded_json", [&](const Call& call) {
    const cubby::CompileRequest request = make_request(
        source, program_name, name_expressions, name_expression_count, options, option_count, arch);
    const cubby::Config& config = call.cache().config();
    nlohmann::json found = nlohmann::json::object();
    auto manifest = config.suite.empty() || config.disabled
                        ? cubby::Result<std::optional<cubby::Manifest>>(std::nullopt)
                        : cubby::load_manifest(config.dir, config.suite);
    if (manifest && *manifest) {
      std::vector<cubby::CompileRequest> recorded;
      for (const cubby::Recipe& recipe : (*manifest)->recipes) {
        recorded.push_back(cubby::request_of(recipe, config.base_dir));
      }
      if (auto nearest = cubby::nearest_recipe(recorded, request)) {
        found = {{"suite", config.suite},
                 {"program", nearest->program_name},
                 {"same_request", nearest->same_request},
                 {"same_source", nearest->same_source},
                 {"line", nearest->line},
                 {"recorded", nearest->recorded_line},
                 {"now", nearest->line_now}};
      }
    }
    nearest_json = cubby::json_text(found);
    return nearest_json.c_str();
  });
}

const char* cubby_stats_summary(const char* stats_json) {
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

}  // extern "C"
