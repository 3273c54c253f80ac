// STUB: placeholder so the library links while this file is written; replace entirely.
#include "cubby/nvrtc.hpp"
namespace cubby {
Result<NvrtcLibrary> locate_nvrtc() { return fail(Errc::nvrtc_unavailable, "stub"); }
PayloadKind payload_kind_for(const std::string&, const std::vector<std::string>&) { return PayloadKind::cubin; }
Result<Entry> compile_nvrtc(const CompileRequest&) { return fail(Errc::nvrtc_unavailable, "stub"); }
Result<std::string> loaded_nvrtc_version() { return fail(Errc::nvrtc_unavailable, "stub"); }
}  // namespace cubby
