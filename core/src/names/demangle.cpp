// Demangling through abi::__cxa_demangle or the toolkit's __cu_demangle (see demangle.hpp).
#include "cubby/demangle.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>

#ifdef CUBBY_HAVE_CUFILT
#include <nv_decode.h>
#endif

namespace cubby {
namespace {

struct FreeDeleter {
  void operator()(char* text) const noexcept { std::free(text); }
};

const char* status_text(int status) {
  switch (status) {
    case -1:
      return "out of memory";
    case -2:
      return "not a valid mangled name";
    case -3:
      return "invalid argument";
    default:
      return "unknown failure";
  }
}

Failure rejected(std::string_view mangled, Demangler demangler, int status) {
  return fail(Errc::invalid_argument, demangler_name(demangler), " could not demangle \"",
              std::string(mangled.substr(0, 200)), mangled.size() > 200 ? "...\"" : "\"", " (",
              status_text(status), ", status ", std::to_string(status),
              "); the symbol is listed by its mangled name only");
}

}  // namespace

const char* demangler_name(Demangler demangler) noexcept {
  return demangler == Demangler::cufilt ? "cufilt" : "cxa";
}

bool cufilt_available() noexcept {
#ifdef CUBBY_HAVE_CUFILT
  return true;
#else
  return false;
#endif
}

Result<std::string> demangle(std::string_view mangled, Demangler demangler) {
  if (mangled.size() < 2 || mangled[0] != '_' || mangled[1] != 'Z') return std::string(mangled);
  if (mangled.find('\0') != std::string_view::npos) return rejected(mangled, demangler, -3);
  const std::string input(mangled);
  int status = -3;
  std::unique_ptr<char, FreeDeleter> text;
  if (demangler == Demangler::cufilt) {
#ifdef CUBBY_HAVE_CUFILT
    text.reset(__cu_demangle(input.c_str(), nullptr, nullptr, &status));
#else
    return fail(Errc::invalid_argument,
                "the toolkit demangler (__cu_demangle, libcufilt) is not part of this libcubby: "
                "it was built without the toolkit's libcufilt.a; use the cxa demangler or rebuild "
                "with a CUDA toolkit that ships lib64/libcufilt.a");
#endif
  } else {
    text.reset(abi::__cxa_demangle(input.c_str(), nullptr, nullptr, &status));
  }
  if (status != 0 || text == nullptr) return rejected(mangled, demangler, status);
  return std::string(text.get());
}

}  // namespace cubby
