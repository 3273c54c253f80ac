// A second, smaller binary that reuses kernels of the example suite (the same compile requests,
// so the same store entries): run after test_mdspan_transform, its first run is already warm.
// CTest runs it with --cubby_require_warm after the main suite's warm-up, which proves it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cubby/testing/gtest.hpp"
#include "mdspan_programs.hpp"
#include "mdspan_reference.hpp"

namespace cubby::examples {
namespace {

// layout_right/int rank 2 and layout_left/long long rank 3 of the main suite.
std::vector<Program> reused_programs() {
  std::vector<Program> reused;
  for (const Program& program : programs()) {
    if (program.name == "layout_right_int_rank2" || program.name == "layout_left_longlong_rank3") {
      reused.push_back(program);
    }
  }
  return reused;
}

const ElementType& element_type(const std::string& spelling) {
  for (const ElementType& type : element_types()) {
    if (type.spelling == spelling) return type;
  }
  throw std::invalid_argument("no element type " + spelling);
}

class ReuseCompile : public cubby::testing::KernelTest {};

TEST_F(ReuseCompile, SharesTheMainSuitesKernels) {
  const std::vector<Program> reused = reused_programs();
  ASSERT_EQ(reused.size(), 2u);
  for (const Program& program : reused) {
    const auto module = compile(request_for(program));
    for (const ElementType& type : element_types()) {
      EXPECT_FALSE(module->lowered_name(program.name_expression(type)).empty());
    }
  }
}

class ReuseGpu : public cubby::testing::GpuKernelTest {};

// transform twice in place: out = (in * 2 + 1) * 2 + 1 = 4 in + 3, on the reused kernels, with
// the typed launch helpers.
TEST_F(ReuseGpu, TransformTwiceInPlace) {
  for (const Program& program : reused_programs()) {
    SCOPED_TRACE(program.name);
    const auto module = compile(request_for(program));
    Shape shape = shape_for(program);
    const std::vector<std::size_t> offsets = offsets_of(program, shape);
    std::vector<float> host(offsets.size() * 4, -1.0f);  // room for the padded layouts
    for (std::size_t i = 0; i < offsets.size(); ++i) host.at(offsets[i]) = float(i % 5);
    cubby::testing::DeviceArray<float> data(host);
    const std::string expression = program.name_expression(element_type("float"));
    for (int round = 0; round < 2; ++round) {
      module->launch(expression, {1}, {64}, data.get(), data.get(), shape, 2.0f, 1.0f);
    }
    const std::vector<float> result = data.to_host();
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      EXPECT_EQ(result[offsets[i]], 4.0f * float(i % 5) + 3.0f) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace cubby::examples
