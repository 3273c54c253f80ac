#include "api/c_api_calls.hpp"

#include <exception>
#include <new>

namespace cubby::c_api {
namespace {

thread_local std::string last_error;
thread_local std::string last_compile_log;

}  // namespace

Registry& registry() {
  static Registry* const instance = new Registry;
  return *instance;
}

std::uintptr_t id_of(const cubby_cache* handle) { return reinterpret_cast<std::uintptr_t>(handle); }

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

int record(cubby_status status, const char* message, const std::string* compile_log) noexcept {
  try {
    last_error = message;
    if (compile_log == nullptr) {
      last_compile_log.clear();
    } else {
      last_compile_log = compile_log->empty() ? last_error : *compile_log;
    }
  } catch (...) {
    // Out of memory while copying the message: keep whatever was there.
  }
  return status;
}

int record_current_exception() noexcept {
  try {
    throw;
  } catch (const cubby::Error& error) {
    return record(status_of(error.code()), error.what(),
                  error.code() == cubby::Errc::compile_failed ? &error.log() : nullptr);
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

Call::Call(cubby_cache* handle, const char* function) noexcept {
  if (handle == nullptr) {
    status_ = refuse(function, ": cache is NULL; open one with cubby_open");
    return;
  }
  try {
    const std::lock_guard lock(registry().mutex);
    const auto found = registry().open.find(id_of(handle));
    if (found != registry().open.end()) {
      open_ = found->second.get();
      ++open_->calls;
      return;
    }
  } catch (...) {
    status_ = record_current_exception();
    return;
  }
  status_ = refuse(function,
                   ": cache is closed (or was never returned by cubby_open); do not use a "
                   "handle after cubby_close, open a new one with cubby_open");
}

Call::~Call() {
  if (open_ == nullptr) return;
  const std::lock_guard lock(registry().mutex);
  if (--open_->calls == 0 && open_->closing) registry().calls_ended.notify_all();
}

int Call::refuse(const char* function, const char* problem) noexcept {
  try {
    return invalid((std::string(function) + problem).c_str());
  } catch (...) {
    return invalid(problem);
  }
}

}  // namespace cubby::c_api

extern "C" {

const char* cubby_last_error(void) { return cubby::c_api::last_error.c_str(); }

const char* cubby_last_compile_log(void) { return cubby::c_api::last_compile_log.c_str(); }

}  // extern "C"
