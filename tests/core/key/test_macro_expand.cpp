// Tests for core/src/key/macro_expand.cpp: which header names a computed include's operand can
// expand to, over every definition of every macro.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "key/macro_expand.hpp"
#include "key/macro_table.hpp"

namespace cubby {
namespace {

// A lookup over recorded definition texts ("NAME BODY", "NAME(P) BODY").
class Definitions {
 public:
  explicit Definitions(std::vector<std::string> texts) : texts_(std::move(texts)) {
    for (const std::string& text : texts_) table_.add(text);
  }
  OperandNames expand(const std::string& operand, const ExpandLimits& limits = {}) {
    return expand_header_operand(
        operand,
        [this](std::string_view name) -> const std::vector<MacroDefinition>& {
          return table_.find(name);
        },
        limits);
  }

 private:
  std::vector<std::string> texts_;
  MacroTable table_;
};

using Names = std::vector<std::string>;

TEST(ExpandHeaderOperand, ThrustsChainOfObjectLikeMacrosGivesEveryBackendsHeader) {
  const std::string tag_header =
      "__THRUST_DEVICE_SYSTEM_TAG_HEADER <__THRUST_DEVICE_SYSTEM_ROOT/detail/execution_policy.h>";
  Definitions defs({"__THRUST_DEVICE_SYSTEM_NAMESPACE cuda", "__THRUST_DEVICE_SYSTEM_NAMESPACE omp",
                    "__THRUST_DEVICE_SYSTEM_NAMESPACE tbb", "__THRUST_DEVICE_SYSTEM_NAMESPACE cpp",
                    "__THRUST_DEVICE_SYSTEM_ROOT thrust/system/__THRUST_DEVICE_SYSTEM_NAMESPACE",
                    tag_header});
  const OperandNames names = defs.expand("__THRUST_DEVICE_SYSTEM_TAG_HEADER");
  EXPECT_TRUE(names.unbounded.empty()) << names.unbounded;
  // Each macro may also be undefined where the include is read: left as it is.
  const std::string left_as_is =
      "thrust/system/__THRUST_DEVICE_SYSTEM_NAMESPACE/detail/execution_policy.h";
  EXPECT_EQ(names.names, (Names{"__THRUST_DEVICE_SYSTEM_ROOT/detail/execution_policy.h", left_as_is,
                                "thrust/system/cpp/detail/execution_policy.h",
                                "thrust/system/cuda/detail/execution_policy.h",
                                "thrust/system/omp/detail/execution_policy.h",
                                "thrust/system/tbb/detail/execution_policy.h"}));
  EXPECT_EQ(names.consulted,
            (Names{"__THRUST_DEVICE_SYSTEM_NAMESPACE", "__THRUST_DEVICE_SYSTEM_ROOT",
                   "__THRUST_DEVICE_SYSTEM_TAG_HEADER", "cpp", "cuda", "detail", "execution_policy",
                   "h", "omp", "system", "tbb", "thrust"}));
}

TEST(ExpandHeaderOperand, QuotedFormsPastingAndStringizingThroughFunctionLikeMacros) {
  Definitions defs({"CONFIG \"config_a.cuh\"", "STR2(x) #x", "STR(x) STR2(x)", "CAT(a, b) a ## b",
                    "NAME CAT(back, end)", "HEADER STR(NAME.cuh)", "backend gpu"});
  EXPECT_EQ(defs.expand("CONFIG").names, Names{"config_a.cuh"});
  // The argument is expanded before STR2 stringizes it: NAME -> CAT(back, end) -> backend -> gpu,
  // each macro also left as it is.
  EXPECT_EQ(defs.expand("HEADER").names,
            (Names{"CAT(back, end).cuh", "NAME.cuh", "backend.cuh", "gpu.cuh"}));
  EXPECT_EQ(defs.expand("STR2(NAME.cuh)").names, Names{"NAME.cuh"});  // # takes it as written
}

TEST(ExpandHeaderOperand, VariadicArgumentsAndAnAbsolutePath) {
  Definitions defs({"FIRST(x, ...) <x/__VA_ARGS__>", "ABS \"/opt/lib/abs.cuh\""});
  EXPECT_EQ(defs.expand("FIRST(lib, a.h)").names, Names{"lib/a.h"});
  EXPECT_EQ(defs.expand("ABS").names, Names{"/opt/lib/abs.cuh"});
}

TEST(ExpandHeaderOperand, AnUndefinedMacroNamesNoHeaderAndAWrongCallIsNotExpanded) {
  Definitions defs({"F(a, b) <a/b.h>"});
  EXPECT_TRUE(defs.expand("NOWHERE").names.empty());
  EXPECT_TRUE(defs.expand("F(only_one)").names.empty());
  EXPECT_EQ(defs.expand("F(x, y)").names, Names{"x/y.h"});
}

TEST(ExpandHeaderOperand, SelfReferenceStopsAsThePreprocessorDoes) {
  Definitions defs({"SELF <SELF.h>", "A B", "B A", "LOOP(x) LOOP(x)"});
  EXPECT_EQ(defs.expand("SELF").names, Names{"SELF.h"});
  EXPECT_TRUE(defs.expand("A").unbounded.empty());
  EXPECT_TRUE(defs.expand("LOOP(1)").unbounded.empty());
}

TEST(ExpandHeaderOperand, ExpansionsThatGrowWithoutBoundHitTheBound) {
  // Each level doubles the sequence and has two definitions: exponential alternatives.
  std::vector<std::string> texts;
  for (int level = 0; level < 20; ++level) {
    const std::string next = "M" + std::to_string(level + 1);
    texts.push_back("M" + std::to_string(level) + " " + next + " " + next);
    texts.push_back("M" + std::to_string(level) + " <" + next + ">");
  }
  Definitions defs(texts);
  const OperandNames names = defs.expand("M0");
  EXPECT_FALSE(names.unbounded.empty());
  EXPECT_NE(names.unbounded.find("bound"), std::string::npos) << names.unbounded;
}

TEST(ExpandHeaderOperand, AMacroWithManyDefinitionsHitsTheAlternativesBound) {
  std::vector<std::string> texts;
  for (int i = 0; i < 300; ++i) texts.push_back("MANY <h" + std::to_string(i) + ".h>");
  Definitions defs(texts);
  EXPECT_FALSE(defs.expand("MANY").unbounded.empty());
  ExpandLimits roomy;
  roomy.max_alternatives = 1'000;
  EXPECT_EQ(defs.expand("MANY", roomy).names.size(), 300u);
}

TEST(ExpandHeaderOperand, AHeaderNameBuiltFromAPredefinedMacroOfTheCompileIsNotBounded) {
  Definitions defs({"ARCH_HEADER <arch___CUDA_ARCH__.h>", "PASTE(a, b) a ## b",
                    "BY_ARCH <PASTE(arch_, __CUDA_ARCH__).h>"});
  EXPECT_TRUE(defs.expand("ARCH_HEADER").unbounded.empty());  // one identifier, no macro in it
  EXPECT_FALSE(defs.expand("BY_ARCH").unbounded.empty());
  EXPECT_FALSE(defs.expand("__FILE__").unbounded.empty());
}

TEST(ExpandHeaderOperand, ATooLongDefinitionIsNotBounded) {
  Definitions defs({"LONG \x01too long"});
  EXPECT_FALSE(defs.expand("LONG").unbounded.empty());
}

TEST(MacroTable, ParsesRecordedDefinitionsAndDefineOptions) {
  const auto object = parse_macro_definition("H \"x.cuh\"");
  ASSERT_TRUE(object);
  EXPECT_FALSE(object->function_like);
  EXPECT_EQ(object->body, "\"x.cuh\"");
  const auto function = parse_macro_definition("F(a,b,...) a b __VA_ARGS__");
  ASSERT_TRUE(function);
  EXPECT_TRUE(function->function_like);
  EXPECT_TRUE(function->variadic);
  EXPECT_EQ(function->parameters, (std::vector<std::string>{"a", "b", "__VA_ARGS__"}));
  EXPECT_FALSE(parse_macro_definition("1X y"));
  EXPECT_EQ(definition_of_define_option("X"), "X 1");
  EXPECT_EQ(definition_of_define_option("CONFIG=\"c.cuh\""), "CONFIG \"c.cuh\"");
  EXPECT_EQ(definition_of_define_option("F(a)=<a.h>"), "F(a) <a.h>");
}

TEST(MacroTable, KeepsEachDistinctDefinitionOnce) {
  const std::vector<std::string> texts = {"A 1", "A 1", "A 2", "B"};
  MacroTable table;
  for (const std::string& text : texts) table.add(text);
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(table.find("A").size(), 2u);
  EXPECT_EQ(table.find("B").size(), 1u);
  EXPECT_TRUE(table.find("C").empty());
}

}  // namespace
}  // namespace cubby
