// The child binary of the harness tests (tests/harness/child_runner.hpp runs it with
// --gtest_output, sharding variables, --cubby_require_warm, ... and inspects its exit code and
// reports). Linked with cubby::gtest_main, exactly as a user's suite is.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cubby/testing/gtest.hpp"

namespace {

// A small program; `tag` makes distinct programs (distinct keys) from one text.
std::string tiny_source(const std::string& tag) {
  return "namespace child_" + tag +
         " {\n"
         "template <class T> __global__ void add_one(T* data, int n) {\n"
         "  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);\n"
         "  if (i < n) data[i] += T(1);\n"
         "}\n"
         "}\n";
}

std::string expression(const std::string& tag) { return "child_" + tag + "::add_one<int>"; }

class Child : public cubby::testing::KernelTest {};

TEST_F(Child, CompilesAlpha) {
  const auto module = compile(tiny_source("alpha"), {expression("alpha")});
  EXPECT_FALSE(module->lowered_name(expression("alpha")).empty());
}

TEST_F(Child, CompilesBeta) {
  const auto module = compile(tiny_source("beta"), {expression("beta")});
  EXPECT_FALSE(module->lowered_name(expression("beta")).empty());
}

// The same program as CompilesAlpha: a memory hit when both run in one process.
TEST_F(Child, ReusesAlpha) {
  const auto module = compile(tiny_source("alpha"), {expression("alpha")});
  EXPECT_FALSE(module->lowered_name(expression("alpha")).empty());
}

// Bypasses cubby::testing::compile: the listener still sees the compile.
TEST_F(Child, DirectCacheCompile) {
  cubby::CompileRequest request;
  request.source = tiny_source("gamma");
  request.name_expressions = {expression("gamma")};
  const cubby::CacheResult result = cubby::testing::cache().compile(request);
  EXPECT_FALSE(result.lowered_name(expression("gamma")).empty());
}

// A -Xcudafe option the key cannot cover: compiled without the store on every run (a suite of its
// own: runs of Child.* stay warm).
const std::vector<std::string> kUnkeyable = {"-Xcudafe", "--no_rtti"};

class ChildUncached : public cubby::testing::KernelTest {};

TEST_F(ChildUncached, CompilesWithoutTheStore) {
  const auto module = compile(tiny_source("delta"), {expression("delta")}, kUnkeyable);
  EXPECT_FALSE(module->lowered_name(expression("delta")).empty());
}

// The same, bypassing cubby::testing::compile: the listener names the reason.
TEST_F(ChildUncached, DirectCompileWithoutTheStore) {
  cubby::CompileRequest request;
  request.source = tiny_source("epsilon");
  request.name_expressions = {expression("epsilon")};
  request.options = kUnkeyable;
  const cubby::CacheResult result = cubby::testing::cache().compile(request);
  EXPECT_FALSE(result.lowered_name(expression("epsilon")).empty());
}

TEST_F(Child, UsesNoKernel) { EXPECT_EQ(1 + 1, 2); }

class ChildGpu : public cubby::testing::GpuKernelTest {};

TEST_F(ChildGpu, LaunchesAlpha) {
  const auto module = compile(tiny_source("alpha"), {expression("alpha")});
  std::vector<int> host = {1, 2, 3, 4, 5};
  cubby::testing::DeviceArray<int> data(host);
  module->launch(expression("alpha"), {1}, {32}, data.get(), static_cast<int>(host.size()));
  EXPECT_EQ(data.to_host(), (std::vector<int>{2, 3, 4, 5, 6}));
}

}  // namespace
