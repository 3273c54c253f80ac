// The C API's blobs and namespaces (cubby.h: cubby_blob_*, cubby_namespace_*): opaque payloads
// of other tools stored under a namespace and a name, through the open cache.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "api/c_api_calls.hpp"
#include "api/c_api_result.hpp"
#include "format/blob.hpp"
#include "store/store.hpp"

using cubby::c_api::Call;
using cubby::c_api::invalid;
using cubby::c_api::make_result;
using cubby::c_api::with_cache;

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

extern "C" {

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

}  // extern "C"
