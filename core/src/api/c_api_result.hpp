// The result handle of the C API (cubby_result, opaque in cubby.h): a CacheResult and its
// lowered-name map indexed for access by position. Made by cubby_compile and the blob lookups,
// read by c_api_result.cpp's cubby_result_* accessors.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cubby/cache.hpp"
#include "cubby/cubby.h"

struct cubby_result {
  cubby::CacheResult result;
  std::string key;  // 32 hex digits
  // The lowered-name map for access by index: the request's expressions in request order (first
  // occurrence of each), then any other expression of the entry in its sorted order.
  std::vector<std::pair<const std::string*, const std::string*>> names;
};

namespace cubby::c_api {

// A result handle over `result`, with its lowered-name map indexed in the order of `requested`
// (the request's name expressions; duplicates and expressions the entry lacks are left out), then
// the entry's other expressions in their sorted order.
std::unique_ptr<cubby_result> make_result(cubby::CacheResult result,
                                          const std::vector<std::string>& requested = {});

}  // namespace cubby::c_api
