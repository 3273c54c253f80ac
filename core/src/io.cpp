// STUB: placeholder so the library links while this file is written; replace entirely.
#include "io.hpp"
namespace cubby::io {
Result<std::string> read_file(const std::filesystem::path&) { return fail(Errc::io, "stub"); }
Result<void> write_file_atomic(const std::filesystem::path&, std::string_view) { return fail(Errc::io, "stub"); }
std::filesystem::path temp_path_for(const std::filesystem::path& path) { return path; }
}  // namespace cubby::io
