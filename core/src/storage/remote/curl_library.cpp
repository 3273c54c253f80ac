#include "storage/remote/curl_library.hpp"

#include <cstdlib>

#include "util/dynamic_library.hpp"

namespace cubby {
namespace {

constexpr const char* kDefaultLibrary = "libcurl.so.4";
constexpr const char* kInstall =
    "HTTP(S) remotes need libcurl: install it (Debian: apt-get install libcurl4) or set "
    "CUBBY_CURL_LIBRARY to its libcurl.so.4";

}  // namespace

namespace detail {

Result<CurlApi> load_curl(const std::string& name) {
  DynamicLibrary curl(name.c_str());
  if (!curl.loaded()) {
    return fail(Errc::io, "cannot load ", name, " (", curl.why(), "); ", kInstall);
  }
  CurlApi api;
  curl.need("curl_global_init", api.global_init);
  curl.need("curl_easy_init", api.easy_init);
  curl.need("curl_easy_cleanup", api.easy_cleanup);
  curl.need("curl_easy_reset", api.easy_reset);
  curl.need("curl_easy_setopt", api.easy_setopt);
  curl.need("curl_easy_getinfo", api.easy_getinfo);
  curl.need("curl_easy_perform", api.easy_perform);
  curl.need("curl_easy_strerror", api.easy_strerror);
  curl.need("curl_slist_append", api.slist_append);
  curl.need("curl_slist_free_all", api.slist_free_all);
  if (const char* missing = curl.missing()) {
    return fail(Errc::io, name, " has no ", missing, ": it is not libcurl 7.85 or newer; ",
                kInstall);
  }
  // Not thread-safe in libcurl: curl_api() makes it once per process, before the first handle.
  if (const CURLcode code = api.global_init(CURL_GLOBAL_DEFAULT); code != CURLE_OK) {
    return fail(Errc::io, name,
                " failed to initialise (curl_global_init: ", api.easy_strerror(code), "); ",
                kInstall);
  }
  return api;
}

}  // namespace detail

const Result<CurlApi>& curl_api() {
  static const Result<CurlApi> api = [] {
    const char* chosen = std::getenv("CUBBY_CURL_LIBRARY");
    return detail::load_curl(chosen != nullptr && *chosen != '\0' ? chosen : kDefaultLibrary);
  }();
  return api;
}

}  // namespace cubby
