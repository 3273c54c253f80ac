// The recorded recipe nearest to a program (core/src/store/nearest_recipe.cpp): what
// --cubby-require-warm shows of a program a second run compiled.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/nearest_recipe.hpp"

namespace cubby {
namespace {

CompileRequest program(const std::string& name, const std::string& source,
                       std::vector<std::string> options = {"-std=c++17"},
                       std::vector<std::string> names = {"k<1>", "k<2>"}) {
  CompileRequest r;
  r.program_name = name;
  r.source = source;
  r.options = std::move(options);
  r.name_expressions = std::move(names);
  return r;
}

TEST(NearestRecipe, NothingRecordedIsNoFinding) {
  EXPECT_FALSE(nearest_recipe({}, program("a.cu", "x\n")).has_value());
}

TEST(NearestRecipe, TheSameRequestMeansOnlyItsKeyChanged) {
  const auto found = nearest_recipe({program("b.cu", "other\n"), program("a.cu", "a\nb\n")},
                                    program("now.cu", "a\nb\n", {"-std=c++17"}, {"k<2>", "k<1>"}));
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(found->same_request);  // name expressions in another order ask the same
  EXPECT_EQ(found->program_name, "a.cu");
}

TEST(NearestRecipe, TheRecipeThatDiffersLatestIsNearestAndItsLineIsShown) {
  const std::vector<CompileRequest> recorded = {
      program("early.cu", "int a;\nint x;\nint c;\n"),
      program("late.cu", "int a;\nint b;\nint y = 1;\n"),
      program("options.cu", "int a;\nint b;\nint c;\n", {"-std=c++20"}),  // other options
  };
  const auto found = nearest_recipe(recorded, program("now.cu", "int a;\nint b;\nint c;\n"));
  ASSERT_TRUE(found.has_value());
  EXPECT_FALSE(found->same_request);
  EXPECT_FALSE(found->same_source);  // options.cu has it, but with other options: skipped
  EXPECT_EQ(found->program_name, "late.cu");
  EXPECT_EQ(found->line, 3u);
  EXPECT_EQ(found->recorded_line, "int y = 1;");
  EXPECT_EQ(found->line_now, "int c;");
}

TEST(NearestRecipe, WithoutARecipeOfTheSameOptionsTheSameSourceIsSaid) {
  const auto found =
      nearest_recipe({program("o.cu", "s\n", {"-std=c++20"})}, program("n.cu", "s\n"));
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(found->same_source);
  EXPECT_FALSE(found->same_request);
}

TEST(NearestRecipe, ASourceThatEndsEarlierDiffersAtItsEndAndLongLinesAreCut) {
  const std::string long_line(500, 'x');
  const auto found =
      nearest_recipe({program("r.cu", "a\n" + long_line + "\n")}, program("n.cu", "a\n"));
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->line, 2u);
  EXPECT_EQ(found->recorded_line.size(), 200u);
  EXPECT_EQ(found->line_now, "");
}

}  // namespace
}  // namespace cubby
