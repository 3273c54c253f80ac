// A shared library loaded at run time with dlopen, for the libraries libcubby uses but does not
// link (NVRTC, the CUDA driver): a process that never needs one never loads it.
#pragma once

#include <dlfcn.h>

#include <string>

namespace cubby {

class DynamicLibrary {
 public:
  // dlopen(`name`, RTLD_NOW | RTLD_LOCAL): `name` is a path, or a file name the dynamic linker
  // searches for. The handle is never closed: the library stays loaded for the life of the
  // process. Check loaded(); why() then says what failed (dlerror's text).
  explicit DynamicLibrary(const char* name) {
    dlerror();
    handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* why = dlerror();
      why_ = why == nullptr ? "unknown error" : why;
    }
  }

  bool loaded() const { return handle_ != nullptr; }
  const std::string& why() const { return why_; }

  // Resolves function `name` into `out` (a function pointer type): false, `out` null, when the
  // library has no such symbol.
  template <class Fn>
  bool resolve(const char* name, Fn& out) const {
    out = reinterpret_cast<Fn>(dlsym(handle_, name));
    return out != nullptr;
  }

  // Resolves a function every caller needs: the first such name that is absent is remembered
  // (missing()), so a table of need() calls is checked once at its end.
  template <class Fn>
  void need(const char* name, Fn& out) {
    if (!resolve(name, out) && missing_ == nullptr) missing_ = name;
  }
  // The first name need() did not find; nullptr when all were found.
  const char* missing() const { return missing_; }

 private:
  void* handle_ = nullptr;
  std::string why_;
  const char* missing_ = nullptr;
};

}  // namespace cubby
