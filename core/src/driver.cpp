// STUB: placeholder so the library links while this file is written; replace entirely.
#include "cubby/driver.hpp"
namespace cubby {
Result<void> gpu_status() { return fail(Errc::driver_unavailable, "stub"); }
Result<std::string> gpu_arch() { return fail(Errc::driver_unavailable, "stub"); }
Result<void> ensure_context() { return fail(Errc::driver_unavailable, "stub"); }
Module::Module(std::shared_ptr<const Entry> entry) : entry_(std::move(entry)) { throw Error(Errc::driver_unavailable, "stub"); }
Module::~Module() = default;
Module::Module(Module&& other) noexcept : entry_(std::move(other.entry_)), module_(other.module_) { other.module_ = nullptr; }
Module& Module::operator=(Module&&) noexcept { return *this; }
CUfunction Module::function(std::string_view) const { throw Error(Errc::driver_unavailable, "stub"); }
DeviceVariable Module::variable(std::string_view) const { throw Error(Errc::driver_unavailable, "stub"); }
void launch(CUfunction, Dim3, Dim3, void**, unsigned) { throw Error(Errc::driver_unavailable, "stub"); }
CUdeviceptr device_alloc(std::size_t) { throw Error(Errc::driver_unavailable, "stub"); }
void device_free(CUdeviceptr) noexcept {}
void copy_to_device(CUdeviceptr, const void*, std::size_t) { throw Error(Errc::driver_unavailable, "stub"); }
void copy_to_host(void*, CUdeviceptr, std::size_t) { throw Error(Errc::driver_unavailable, "stub"); }
}  // namespace cubby
