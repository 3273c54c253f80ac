// Errors: `Result<T>` inside the library, `cubby::Error` at the public boundary.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

#include "cubby/export.h"

namespace cubby {

// What went wrong, coarse enough for callers (and the C API) to branch on.
enum class Errc {
  io,                  // a file or folder could not be read or written
  corrupt,             // bytes that do not decode (bad magic, checksum, truncation)
  not_found,           // no such entry / file
  invalid_argument,    // bad option, bad name expression, bad key text, ...
  compile_failed,      // NVRTC rejected the program; the message and Failure::log carry its log
  nvrtc_unavailable,   // libnvrtc could not be found or loaded
  driver_unavailable,  // libcuda.so.1 could not be loaded
  no_gpu,              // the driver loaded but there is no usable device
  cuda_error,          // a driver call failed
  name_not_found,      // a name expression is not in the entry / module
};

// Stable lowercase name of a code ("compile_failed"), used in JSON and the C API.
CUBBY_API const char* errc_name(Errc code) noexcept;

// A failure: a code and a message that says what happened and what to do. `log` is NVRTC's
// compile log of an Errc::compile_failed from NVRTC's compile step (NVRTC's error text when it
// left no log; with cubby's note on unresolvable name expressions appended), what
// cubby_last_compile_log and Python's CompileError.log give; empty for every other failure. The
// message quotes the log for people; programs read it here, never out of the message text.
struct Failure {
  Errc code;
  std::string message;
  std::string log = {};
};

// The one exception type thrown across the public boundary (Cache, Module, CLI helpers).
class CUBBY_API Error : public std::runtime_error {
 public:
  explicit Error(Failure failure)
      : std::runtime_error(failure.message),
        code_(failure.code),
        log_(failure.log.empty() ? nullptr
                                 : std::make_shared<const std::string>(std::move(failure.log))) {}
  Error(Errc code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Errc code() const noexcept { return code_; }
  // NVRTC's compile log (Failure::log); empty when the failure carries none.
  const std::string& log() const noexcept {
    static const std::string kNone;
    return log_ ? *log_ : kNone;
  }

 private:
  Errc code_;
  std::shared_ptr<const std::string> log_;  // shared: copying an exception must not throw
};

// `expected`-style result: a value or a Failure. Contract: `value()` requires `ok()`;
// `error()` requires `!ok()`; `value_or_throw()` turns a failure into `cubby::Error`.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}            // NOLINT(google-explicit-constructor)
  Result(Failure failure) : state_(std::move(failure)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Failure& error() const& { return std::get<1>(state_); }
  Failure&& error() && { return std::get<1>(std::move(state_)); }

  T value_or_throw() && {
    if (!ok()) throw Error(std::get<1>(std::move(state_)));
    return std::get<0>(std::move(state_));
  }

 private:
  std::variant<T, Failure> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Failure failure) : failure_(std::move(failure)), ok_(false) {}  // NOLINT

  bool ok() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  const Failure& error() const& { return failure_; }
  void value_or_throw() && {
    if (!ok_) throw Error(std::move(failure_));
  }

 private:
  Failure failure_{Errc::io, {}};
  bool ok_ = true;
};

// Shorthand for building failures: `return fail(Errc::io, "cannot read ", path);`
template <class... Parts>
Failure fail(Errc code, Parts&&... parts) {
  std::string message;
  (message.append(std::forward<Parts>(parts)), ...);
  return Failure{code, std::move(message)};
}

}  // namespace cubby
