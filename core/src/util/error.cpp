#include "cubby/error.hpp"

namespace cubby {

const char* errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::io:
      return "io";
    case Errc::corrupt:
      return "corrupt";
    case Errc::not_found:
      return "not_found";
    case Errc::invalid_argument:
      return "invalid_argument";
    case Errc::compile_failed:
      return "compile_failed";
    case Errc::nvrtc_unavailable:
      return "nvrtc_unavailable";
    case Errc::driver_unavailable:
      return "driver_unavailable";
    case Errc::no_gpu:
      return "no_gpu";
    case Errc::cuda_error:
      return "cuda_error";
    case Errc::name_not_found:
      return "name_not_found";
  }
  return "unknown";
}

}  // namespace cubby
