/* A C program on cubby's C API (cubby/cubby.h): compiles fill<int> through the cache in the store
 * CUBBY_DIR names and prints "KEY TIER LOWERED_NAME". Built by tests/install/run_c.sh with CMake
 * and with pkg-config, as C11 with warnings as errors. */
#include <cubby/cubby.h>
#include <stdio.h>

int main(void) {
  static const char* const kSource = "template <class T> __global__ void fill(T* p) { *p = T(1); }";
  const char* const names[] = {"fill<int>"};
  cubby_cache* cache = NULL;
  cubby_result* result = NULL;
  if (cubby_open(NULL, &cache) != CUBBY_OK) {
    fprintf(stderr, "cubby_open: %s\n", cubby_last_error());
    return 1;
  }
  if (cubby_compile(cache, kSource, NULL, names, 1, NULL, 0, "sm_90", &result) != CUBBY_OK) {
    fprintf(stderr, "cubby_compile: %s\n", cubby_last_error());
    cubby_close(cache);
    return 1;
  }
  const char* lowered = cubby_result_lowered_name_of(result, "fill<int>");
  printf("%s %s %s\n", cubby_result_key(result), cubby_result_tier(result),
         lowered != NULL ? lowered : "(none)");
  cubby_result_free(result);
  cubby_close(cache);
  return 0;
}
