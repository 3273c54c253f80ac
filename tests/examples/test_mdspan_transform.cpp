// The example suite (the template to copy): a templated cuda::std::mdspan kernel instantiated over
// 3 layouts x 2 index types x 4 ranks (24 NVRTC programs) x 14 element types (336 kernels).
// MdspanCompile runs everywhere (compile, then check every kernel is in the CUBIN); MdspanGpu
// launches every instantiation and checks its output byte for byte (skips without a GPU).
// Every compile goes through the cubby store: the first run compiles, every later run loads.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "cubby/cubin.hpp"
#include "cubby/testing/gtest.hpp"
#include "mdspan_programs.hpp"
#include "mdspan_reference.hpp"

namespace cubby::examples {
namespace {

std::string program_name(const ::testing::TestParamInfo<Program>& info) { return info.param.name; }

std::string hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (unsigned char byte : bytes) {
    text += digits[byte >> 4];
    text += digits[byte & 15];
  }
  return text;
}

class MdspanCompile : public cubby::testing::KernelTest,
                      public ::testing::WithParamInterface<Program> {};

TEST_P(MdspanCompile, EveryInstantiationIsAKernelOfTheCubin) {
  const Program& program = GetParam();
  const auto module = compile(request_for(program));
  ASSERT_EQ(module->entry().kind, PayloadKind::cubin);
  auto symbols = read_cubin_symbols(module->entry().payload);
  ASSERT_TRUE(symbols.ok()) << symbols.error().message;
  std::set<std::string> lowered;
  for (const ElementType& type : element_types()) {
    const std::string expression = program.name_expression(type);
    const std::string& name = module->lowered_name(expression);
    EXPECT_TRUE(symbols->has_kernel(name)) << expression << " -> " << name;
    lowered.insert(name);
  }
  EXPECT_EQ(lowered.size(), element_types().size()) << "two instantiations share a symbol";
  EXPECT_EQ(symbols->kernels.size(), element_types().size());
}

INSTANTIATE_TEST_SUITE_P(Mdspan, MdspanCompile, ::testing::ValuesIn(programs()), program_name);

class MdspanGpu : public cubby::testing::GpuKernelTest,
                  public ::testing::WithParamInterface<Program> {};

TEST_P(MdspanGpu, LaunchEveryInstantiation) {
  const Program& program = GetParam();
  const auto module = compile(request_for(program));
  Shape shape = shape_for(program);
  for (const ElementType& type : element_types()) {
    const std::string expression = program.name_expression(type);
    SCOPED_TRACE(expression);
    const Case c = case_for(program, type);
    DeviceBuffer in(c.in.size());
    DeviceBuffer out(c.out_before.size());
    copy_to_device(in.get(), c.in.data(), c.in.size());
    copy_to_device(out.get(), c.out_before.data(), c.out_before.size());
    // The element type is known at run time only: pass a and b as raw bytes of its size.
    alignas(16) std::array<unsigned char, 16> a{};
    alignas(16) std::array<unsigned char, 16> b{};
    std::memcpy(a.data(), c.a.data(), c.a.size());
    std::memcpy(b.data(), c.b.data(), c.b.size());
    CUdeviceptr out_pointer = out.get();
    CUdeviceptr in_pointer = in.get();
    void* args[] = {&out_pointer, &in_pointer, &shape, a.data(), b.data()};
    cubby::launch(module->function(expression), {2}, {32}, args);
    std::string result(c.expected.size(), '\0');
    copy_to_host(result.data(), out.get(), result.size());
    EXPECT_EQ(hex(result), hex(c.expected));
  }
}

INSTANTIATE_TEST_SUITE_P(Mdspan, MdspanGpu, ::testing::ValuesIn(programs()), program_name);

}  // namespace
}  // namespace cubby::examples
