#include "api/c_api_result.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <string_view>

#include "api/c_api_calls.hpp"

namespace cubby::c_api {

std::unique_ptr<cubby_result> make_result(cubby::CacheResult result,
                                          const std::vector<std::string>& requested) {
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

}  // namespace cubby::c_api

using cubby::c_api::record_current_exception;

extern "C" {

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

}  // extern "C"
