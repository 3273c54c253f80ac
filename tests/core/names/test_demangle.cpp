// Tests for core/src/names/demangle.cpp: abi::__cxa_demangle and the toolkit's __cu_demangle.
#include <gtest/gtest.h>

#include <string>

#include "cubby/demangle.hpp"

namespace cubby {
namespace {

TEST(Demangle, ItaniumNamesOfNvrtcKernels) {
  auto text = demangle("_ZN2ns2v21kImLi128EEEvPT_");
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "void ns::v2::k<unsigned long, 128>(unsigned long*)");
  auto variable = demangle("_ZN2ns5tableIdEE");
  ASSERT_TRUE(variable.ok());
  EXPECT_EQ(*variable, "ns::table<double>");
  auto enumeration = demangle("_ZN2ns1eILNS_3TagE1EEEvPi");
  ASSERT_TRUE(enumeration.ok());
  EXPECT_EQ(*enumeration, "void ns::e<(ns::Tag)1>(int*)");
}

TEST(Demangle, UnmangledNamesPassThrough) {
  auto text = demangle("extern_c_kernel");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "extern_c_kernel");
  auto empty = demangle("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, "");
}

TEST(Demangle, InvalidNamesFailWithTheSymbol) {
  for (const std::string& bad : {std::string("_Z"), std::string("_ZN2ns"),
                                 std::string("_Z\xff\xfe"), std::string("_ZN2ns1k\0IiEEvv", 15)}) {
    auto text = demangle(bad);
    ASSERT_FALSE(text.ok()) << bad;
    EXPECT_EQ(text.error().code, Errc::invalid_argument);
    EXPECT_NE(text.error().message.find("could not demangle"), std::string::npos)
        << text.error().message;
  }
}

TEST(Demangle, ToolkitDemanglerAgreesWithCxaOrSaysItIsMissing) {
  const std::string name = "_ZN2ns1aILc97EEEvPi";
  auto cufilt = demangle(name, Demangler::cufilt);
  if (!cufilt_available()) {
    ASSERT_FALSE(cufilt.ok());
    EXPECT_NE(cufilt.error().message.find("libcufilt"), std::string::npos)
        << cufilt.error().message;
    return;
  }
  ASSERT_TRUE(cufilt.ok()) << cufilt.error().message;
  EXPECT_NE(cufilt->find("ns::a<"), std::string::npos) << *cufilt;
  EXPECT_FALSE(demangle("_ZN2ns", Demangler::cufilt).ok());
}

TEST(Demangle, NamesOfTheDemanglers) {
  EXPECT_STREQ(demangler_name(Demangler::cxa), "cxa");
  EXPECT_STREQ(demangler_name(Demangler::cufilt), "cufilt");
}

}  // namespace
}  // namespace cubby
