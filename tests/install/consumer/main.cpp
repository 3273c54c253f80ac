// A downstream project: find_package(cubby), compile through the cache, print key/tier/name.
#include <cubby/cubby.hpp>
#include <iostream>

int main() {
  cubby::CompileRequest request;
  request.source = "template <class T> __global__ void fill(T* p) { *p = T(1); }";
  request.name_expressions = {"fill<int>"};
  request.arch = "sm_90";
  cubby::Cache cache;
  const cubby::CacheResult result = cache.compile(request);
  std::cout << result.key.hex() << ' ' << cubby::source_name(result.tier) << ' '
            << result.lowered_name("fill<int>") << '\n';
  return 0;
}
