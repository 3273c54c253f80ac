// Tests for core/src/key/include_lexer.cpp: include directives after translation phases 1-3.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "key/include_lexer.hpp"

namespace cubby {
namespace {

TEST(ListIncludes, LiteralsOpenNoCommentAndNonDirectivesAreNotIncludes) {
  const IncludeList list = list_includes(
      "const char* s = \"/*\";\n#include \"after_string.cuh\"\n"
      "const char* r = R\"x(a\"b/*c)x\";\n#include \"after_raw.cuh\"\n"
      "char c = '\"'; int n = 1'000; /* x */\n#include \"after_char.cuh\"\n"
      "int q; /* a\n b */ #include \"not_first_on_line.cuh\"\n"
      "// comment \\ \n#include \"after_backslash_blank.cuh\"\n"
      "const char* t = R\"(\n#include \"in_raw.cuh\"\n)\";\n"
      "%:%: include \"paste.cuh\"\n"
      "#define X # include \"in_define.cuh\"\n");
  EXPECT_EQ(list.names, (std::vector<std::string>{"after_backslash_blank.cuh", "after_char.cuh",
                                                  "after_raw.cuh", "after_string.cuh"}));
  EXPECT_TRUE(list.unresolvable.empty());
}

TEST(ListIncludes, MacroOperandsAreComputedIncludesWithTheirLinesAndDefinitionsAreRecorded) {
  const IncludeList list = list_includes(
      "#define H \"v.cuh\"\n#include H\n# include MAKE( v ) // why\n"
      "#if __has_include(HDR)\n#endif\n#include <ok.cuh>\n#include\n"
      "#define MAKE(x, ...) <x/**/.h>  /* c */\n#inc\\\nlude_next /* a */ H\n"
      "#define EMPTY\n#define F() 1\n");
  EXPECT_EQ(list.names, std::vector<std::string>{"ok.cuh"});
  EXPECT_TRUE(list.unresolvable.empty());
  EXPECT_EQ(list.computed,
            (std::vector<std::string>{"2\t#include H\tH", "3\t#include MAKE( v )\tMAKE( v )",
                                      "4\t__has_include(HDR)\tHDR", "9\t#include_next H\tH"}));
  EXPECT_EQ(list.defines,
            (std::vector<std::string>{"EMPTY", "F() 1", "H \"v.cuh\"", "MAKE(x,...) <x .h>"}));
}

TEST(ListIncludes, ALongDefinitionIsRecordedAsTooLong) {
  const IncludeList list =
      list_includes("#define LONG " + std::string(kMaxDefinitionBody + 1, 'x') + "\n");
  EXPECT_EQ(list.defines, std::vector<std::string>{"LONG " + std::string(kTooLongBody)});
}

TEST(ListIncludes, HasIncludeThroughAnAliasIsUnresolvable) {
  const IncludeList list = list_includes(
      "#define HI __has_include\n#if HI(\"opt.h\")\n#endif\n"
      "#if defined(__has_include)\n#endif\n#ifdef __has_include\n#endif\n");
  ASSERT_EQ(list.unresolvable.size(), 1u);
  EXPECT_TRUE(list.unresolvable[0].starts_with("1: __has_include: ")) << list.unresolvable[0];
}

TEST(ListIncludes, HasIncludeWrappersProbeTheirLiteralNames) {
  const IncludeList list = list_includes(
      "#if _CCCL_HAS_INCLUDE(<cccl_opt.h>) || my_has_include(\"mine.h\")\n#endif\n"
      "#if _CCCL_HAS_INCLUDE(HDR)\n#endif\n#ifdef _CCCL_HAS_INCLUDE\n#endif\n");
  EXPECT_EQ(list.names, (std::vector<std::string>{"cccl_opt.h", "mine.h"}));
  EXPECT_TRUE(list.unresolvable.empty());
  EXPECT_EQ(list.computed, std::vector<std::string>{"3\t_CCCL_HAS_INCLUDE(HDR)\tHDR"});
}

TEST(ListIncludes, AMacroThatTestsItsParameterIsAnIncludeTestMacroAndItsCallsAreListed) {
  const IncludeList list = list_includes(
      "#ifdef __has_include\n#  define HAS(_X) __has_include(_X)\n#else\n#  define HAS(_X) 0\n"
      "#endif\n#define ONE(h) HAS(h)\n#define TWO(a, b) HAS(b)\n"
      "#define NOT(a) __has_include(OTHER)\n#define PAIR(a, b) __has_include(b)\n"
      "#define FIXED() HAS(<fixed.h>)\n#define ALIAS HAS\n"
      "#if HAS(<cuda_fp16.h>) && HAS ( \"local.cuh\" ) || TWO(x, <y.h>)\n#endif\n"
      "#if HAS(MACRO)\n#endif\nint v = f(\"text\") + g(n) + h(1, \"#x\");\n");
  EXPECT_TRUE(list.names.empty());
  EXPECT_EQ(list.test_macros, std::vector<std::string>{"HAS"});
  EXPECT_EQ(list.forwards, (std::vector<std::string>{"ALIAS HAS", "ONE HAS", "TWO HAS *"}));
  EXPECT_EQ(list.calls,
            (std::vector<std::string>{"HAS \"local.cuh\"", "HAS <cuda_fp16.h>", "HAS <fixed.h>",
                                      "HAS MACRO", "TWO ?", "f \"text\"", "g n", "h ?"}));
  // A #define's __has_include of one of several parameters stays unresolvable; of another
  // name, it is a computed include test.
  ASSERT_EQ(list.unresolvable.size(), 1u);
  EXPECT_TRUE(list.unresolvable[0].starts_with("9: #define PAIR: __has_include(b): "))
      << list.unresolvable[0];
  EXPECT_EQ(list.computed, std::vector<std::string>{"8\t__has_include(OTHER)\tOTHER"});
}

}  // namespace
}  // namespace cubby
