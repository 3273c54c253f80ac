// The libcurl functions the HTTP(S) remote calls (http.cpp), loaded with dlopen on first use:
// libcubby does not link libcurl (about 25 libraries with its own dependencies, ~5 ms to load), so
// a process without an HTTP(S) remote never loads it. <curl/curl.h> gives the types and constants
// only.
//
// The library: CUBBY_CURL_LIBRARY (a path) when set, else "libcurl.so.4" as the dynamic linker
// finds it (Debian: libcurl4). A library that cannot be loaded, lacks a function or fails
// curl_global_init is Errc::io with a message that says what to install or set: an HTTP(S) remote
// is then not used (said once; lookups are misses and compile locally, as with an unreachable one).
#pragma once

#include <curl/curl.h>

#include <string>

#include "cubby/error.hpp"

namespace cubby {

struct CurlApi {
  decltype(&::curl_global_init) global_init = nullptr;
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_reset) easy_reset = nullptr;
  // Variadic, as curl_easy_setopt and curl_easy_getinfo are (their arguments unchecked: pass
  // long, curl_off_t, pointers exactly as curl.h documents each option).
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  decltype(&::curl_easy_perform) easy_perform = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  decltype(&::curl_slist_append) slist_append = nullptr;
  decltype(&::curl_slist_free_all) slist_free_all = nullptr;
};

// libcurl, loaded and initialised (curl_global_init) on the first call, once per process; a
// failure is remembered too. Thread-safe.
const Result<CurlApi>& curl_api();

namespace detail {
// Loads the library `name` (a path or a file name) and initialises it, every call (for tests).
Result<CurlApi> load_curl(const std::string& name);
}  // namespace detail

}  // namespace cubby
