// The C API's prefetch (cubby.h: cubby_prefetch_*): `cubby warm --prefetch` started beside a run
// (cubby/prefetch.hpp), stopped when the handle is freed.
#include <memory>
#include <string>

#include "api/c_api_calls.hpp"
#include "cubby/config.hpp"
#include "cubby/prefetch.hpp"

using cubby::c_api::guarded;
using cubby::c_api::invalid;

struct cubby_prefetch {
  cubby::Prefetch prefetch;
};

namespace {

int start_prefetch(const char* function, const char* dir, const char* suite,
                   cubby::PrefetchStart when, cubby_prefetch** out) {
  if (out == nullptr) {
    return invalid(
        (std::string(function) + ": out is NULL; pass the address of a cubby_prefetch*").c_str());
  }
  *out = nullptr;
  if (suite == nullptr || *suite == '\0') {
    return invalid(
        (std::string(function) + ": suite is empty; name the suite whose recipes to warm").c_str());
  }
  return guarded([&]() -> int {
    cubby::Config config = cubby::Config::load(dir == nullptr ? "" : dir).value_or_throw();
    config.suite = suite;
    auto handle = std::make_unique<cubby_prefetch>();
    handle->prefetch.start(config, when);
    *out = handle.release();
    return CUBBY_OK;
  });
}

}  // namespace

extern "C" {

int cubby_prefetch_start(const char* dir, const char* suite, cubby_prefetch** out) {
  return start_prefetch("cubby_prefetch_start", dir, suite, cubby::PrefetchStart::now, out);
}

int cubby_prefetch_start_at_first_miss(const char* dir, const char* suite, cubby_prefetch** out) {
  return start_prefetch("cubby_prefetch_start_at_first_miss", dir, suite,
                        cubby::PrefetchStart::at_first_miss, out);
}

long cubby_prefetch_pid(const cubby_prefetch* prefetch) {
  return prefetch == nullptr ? 0 : prefetch->prefetch.pid();
}

const char* cubby_prefetch_note(const cubby_prefetch* prefetch) {
  return prefetch == nullptr ? "" : prefetch->prefetch.note().c_str();
}

void cubby_prefetch_stop(cubby_prefetch* prefetch) { delete prefetch; }

}  // extern "C"
