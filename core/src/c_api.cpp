// The C API (cubby.h): opaque handles over cubby::Cache and cubby::CacheResult. Every entry point
// catches every exception and records it as this thread's last error; nothing is thrown across
// the C boundary.
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cubby/cache.hpp"
#include "cubby/config.hpp"
#include "cubby/cubby.h"
#include "cubby/error.hpp"
#include "cubby/version.hpp"
#include "stats_report.hpp"

struct cubby_cache {
  std::unique_ptr<cubby::Cache> cache;
  std::string stats_json;    // storage for cubby_stats_json's answer
  std::string explain_json;  // storage for cubby_explain_json's answer
  std::string dir;           // the store folder, for cubby_store_dir
};

struct cubby_result {
  cubby::CacheResult result;
  std::string key;  // 32 hex digits
  // The entry's lowered-name map in its (sorted) order, for access by index.
  std::vector<std::pair<const std::string*, const std::string*>> names;
};

namespace {

thread_local std::string last_error;
thread_local std::string last_compile_log;

constexpr std::string_view kCompileFailedPrefix = "NVRTC could not compile ";

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

// NVRTC's log from a compile_failed message ("NVRTC could not compile <name>:\n<log>"): what
// follows the first line when the message has that shape, else the whole message.
std::string compile_log_of(const std::string& message) {
  if (message.rfind(kCompileFailedPrefix, 0) == 0) {
    const auto newline = message.find('\n');
    if (newline != std::string::npos) return message.substr(newline + 1);
  }
  return message;
}

// Records a failure as this thread's last error and returns its status. Never throws.
int record(cubby_status status, const char* message, bool compile_failed = false) noexcept {
  try {
    last_error = message;
    last_compile_log = compile_failed ? compile_log_of(last_error) : std::string();
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
                  error.code() == cubby::Errc::compile_failed);
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

// A result handle over `result`, with its lowered-name map indexed.
std::unique_ptr<cubby_result> make_result(cubby::CacheResult result) {
  auto handle = std::make_unique<cubby_result>();
  handle->result = std::move(result);
  handle->key = handle->result.key.hex();
  handle->names.reserve(handle->result.entry->lowered_names.size());
  for (const auto& [expression, lowered] : handle->result.entry->lowered_names) {
    handle->names.emplace_back(&expression, &lowered);
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
  try {
    cubby::Config config = cubby::Config::from_env().value_or_throw();
    if (dir != nullptr) {
      if (*dir == '\0')
        return invalid("cubby_open: dir is empty; pass a folder or NULL for the default");
      config.dir = dir;
    }
    auto handle = std::make_unique<cubby_cache>();
    handle->dir = config.dir.string();
    handle->cache = std::make_unique<cubby::Cache>(std::move(config));
    *out = handle.release();
    return CUBBY_OK;
  } catch (...) {
    return record_current_exception();
  }
}

void cubby_close(cubby_cache* cache) { delete cache; }

int cubby_compile(cubby_cache* cache, const char* source, const char* program_name,
                  const char* const* name_expressions, size_t name_expression_count,
                  const char* const* options, size_t option_count, const char* arch,
                  cubby_result** out) {
  if (out == nullptr)
    return invalid("cubby_compile: out is NULL; pass the address of a cubby_result*");
  *out = nullptr;
  if (cache == nullptr) return invalid("cubby_compile: cache is NULL; open one with cubby_open");
  try {
    const cubby::CompileRequest request = make_request(
        source, program_name, name_expressions, name_expression_count, options, option_count, arch);
    auto handle = std::make_unique<cubby_result>();
    *out = make_result(cache->cache->compile(request)).release();
    return CUBBY_OK;
  } catch (...) {
    return record_current_exception();
  }
}

int cubby_key(cubby_cache* cache, const char* source, const char* program_name,
              const char* const* name_expressions, size_t name_expression_count,
              const char* const* options, size_t option_count, const char* arch, char key_out[33]) {
  if (key_out == nullptr) return invalid("cubby_key: key_out is NULL; pass a buffer of 33 chars");
  key_out[0] = '\0';
  if (cache == nullptr) return invalid("cubby_key: cache is NULL; open one with cubby_open");
  try {
    const cubby::CompileRequest request = make_request(
        source, program_name, name_expressions, name_expression_count, options, option_count, arch);
    const std::string hex = cache->cache->key_of(request).hex();
    if (hex.size() != 32) {
      return record(CUBBY_ERROR_INTERNAL,
                    "internal error in cubby: a key is not 32 hex digits (please report this)");
    }
    std::memcpy(key_out, hex.c_str(), hex.size() + 1);
    return CUBBY_OK;
  } catch (...) {
    return record_current_exception();
  }
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

const char* cubby_stats_json(cubby_cache* cache) {
  if (cache == nullptr) {
    invalid("cubby_stats_json: cache is NULL; open one with cubby_open");
    return nullptr;
  }
  try {
    const nlohmann::json json = cubby::stats_to_json(cache->cache->stats());
    cache->stats_json = json.dump();
    return cache->stats_json.c_str();
  } catch (...) {
    record_current_exception();
    return nullptr;
  }
}

const char* cubby_store_dir(cubby_cache* cache) {
  if (cache == nullptr) {
    invalid("cubby_store_dir: cache is NULL; open one with cubby_open");
    return nullptr;
  }
  return cache->dir.c_str();
}

int cubby_store_usage(cubby_cache* cache, uint64_t* entries, uint64_t* bytes) {
  if (entries != nullptr) *entries = 0;
  if (bytes != nullptr) *bytes = 0;
  if (cache == nullptr)
    return invalid("cubby_store_usage: cache is NULL; open one with cubby_open");
  try {
    uint64_t count = 0;
    uint64_t total = 0;
    auto listed = cache->cache->disk().list([&](const cubby::DiskEntryInfo& info) {
      ++count;
      total += info.bytes;
    });
    if (!listed) throw cubby::Error(std::move(listed).error());
    if (entries != nullptr) *entries = count;
    if (bytes != nullptr) *bytes = total;
    return CUBBY_OK;
  } catch (...) {
    return record_current_exception();
  }
}

int cubby_clear(cubby_cache* cache, uint64_t* removed) {
  if (removed != nullptr) *removed = 0;
  if (cache == nullptr) return invalid("cubby_clear: cache is NULL; open one with cubby_open");
  try {
    const uint64_t count = cache->cache->disk().clear().value_or_throw();
    if (removed != nullptr) *removed = count;
    return CUBBY_OK;
  } catch (...) {
    return record_current_exception();
  }
}

const char* cubby_explain_json(cubby_cache* cache, const char* source, const char* program_name,
                               const char* const* name_expressions, size_t name_expression_count,
                               const char* const* options, size_t option_count, const char* arch) {
  if (cache == nullptr) {
    invalid("cubby_explain_json: cache is NULL; open one with cubby_open");
    return nullptr;
  }
  try {
    const cubby::CompileRequest request = make_request(
        source, program_name, name_expressions, name_expression_count, options, option_count, arch);
    nlohmann::json fields = nlohmann::json::array();
    for (const cubby::KeyField& field : cubby::explain_key(cache->cache->key_inputs(request))) {
      fields.push_back({{"label", field.label}, {"summary", field.summary}, {"hash", field.hash}});
    }
    cache->explain_json = fields.dump();
    return cache->explain_json.c_str();
  } catch (...) {
    record_current_exception();
    return nullptr;
  }
}

int cubby_blob_get(cubby_cache* cache, const char* ns, const char* name, cubby_result** out) {
  if (out == nullptr)
    return invalid("cubby_blob_get: out is NULL; pass the address of a cubby_result*");
  *out = nullptr;
  if (cache == nullptr) return invalid("cubby_blob_get: cache is NULL; open one with cubby_open");
  if (ns == nullptr || name == nullptr)
    return invalid("cubby_blob_get: ns or name is NULL; pass a namespace and a name");
  try {
    auto result = cache->cache->load_blob(ns, name);
    if (result) *out = make_result(std::move(*result)).release();
    return CUBBY_OK;
  } catch (...) {
    return record_current_exception();
  }
}

int cubby_blob_put(cubby_cache* cache, const char* ns, const char* name, const void* data,
                   size_t size, double compile_ms) {
  if (cache == nullptr) return invalid("cubby_blob_put: cache is NULL; open one with cubby_open");
  if (ns == nullptr || name == nullptr)
    return invalid("cubby_blob_put: ns or name is NULL; pass a namespace and a name");
  if (data == nullptr && size != 0)
    return invalid("cubby_blob_put: data is NULL but size is not 0; pass the payload");
  try {
    const std::string_view payload =
        size == 0 ? std::string_view() : std::string_view(static_cast<const char*>(data), size);
    (void)cache->cache->store_blob(ns, name, payload, compile_ms);
    return CUBBY_OK;
  } catch (...) {
    return record_current_exception();
  }
}

}  // extern "C"
