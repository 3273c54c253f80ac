// Tests for core/src/key/computed_includes.cpp: a scan's definitions and what its computed
// includes expand to under them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "key/computed_includes.hpp"

namespace cubby {
namespace {

TEST(ComputedIncludes, SitesSplitIntoLineDirectiveAndOperand) {
  ComputedSite site;
  ASSERT_TRUE(parse_computed_site("12\t#include H\tH", site));
  EXPECT_EQ(site.line, "12");
  EXPECT_EQ(site.directive, "#include H");
  EXPECT_EQ(site.operand, "H");
  EXPECT_FALSE(parse_computed_site("12 #include H", site));
}

TEST(ComputedIncludes, DefineOptionsAndLaterDefinitionsWidenAnExpansion) {
  ComputedIncludes computed({"CONFIG=<from_option.h>"});
  EXPECT_EQ(computed.expand("CONFIG").names, std::vector<std::string>{"from_option.h"});
  const std::vector<std::string> defines = {"CONFIG \"from_header.h\""};
  computed.add_definitions(defines);  // a file found later defines it too
  EXPECT_EQ(computed.expand("CONFIG").names,
            (std::vector<std::string>{"from_header.h", "from_option.h"}));
  EXPECT_EQ(computed.definitions(), 6u);  // 4 fixed predefined + 2
  EXPECT_TRUE(computed.consulted().contains("CONFIG"));
  EXPECT_FALSE(computed.consulted().contains("OTHER"));
  // NVRTC's fixed predefined macros are known.
  EXPECT_EQ(computed.expand("<__CUDACC__/x.h>").names,
            (std::vector<std::string>{"1/x.h", "__CUDACC__/x.h"}));
}

}  // namespace
}  // namespace cubby
