// Options: CUBBY_REQUIRE_WARM and the --cubby_ flags (parsed and removed from argv).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cubby/error.hpp"
#include "cubby/testing/options.hpp"
#include "test_support.hpp"

namespace cubby::testing {
namespace {

// argv storage for parse_flags (which rewrites the pointer array).
struct Args {
  explicit Args(std::vector<std::string> values) : strings(std::move(values)) {
    for (auto& s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
    argc = static_cast<int>(strings.size());
  }
  std::vector<std::string> left() const {
    std::vector<std::string> result;
    for (int i = 0; i < argc; ++i) result.emplace_back(pointers[static_cast<std::size_t>(i)]);
    return result;
  }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
  int argc = 0;
};

TEST(Options, RequireWarmFromEnvironment) {
  {
    ScopedEnv env("CUBBY_REQUIRE_WARM", "1");
    EXPECT_TRUE(Options::from_env().require_warm);
  }
  {
    ScopedEnv env("CUBBY_REQUIRE_WARM", "off");
    EXPECT_FALSE(Options::from_env().require_warm);
  }
  {
    ScopedEnv env("CUBBY_REQUIRE_WARM", std::nullopt);
    EXPECT_FALSE(Options::from_env().require_warm);
    EXPECT_TRUE(Options::from_env().dir.empty());
  }
}

TEST(Options, MalformedRequireWarmNamesTheVariable) {
  ScopedEnv env("CUBBY_REQUIRE_WARM", "maybe");
  try {
    (void)Options::from_env();
    FAIL() << "expected cubby::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(error.what()).find("CUBBY_REQUIRE_WARM=maybe"), std::string::npos);
  }
}

TEST(Options, FlagsAreReadAndRemovedOthersKeptInOrder) {
  Args args({"prog", "--gtest_filter=A.*", "--cubby_dir=/tmp/store", "x", "--cubby_require_warm",
             "--cubby_quiet=0", "--gtest_brief=1"});
  const Options options = parse_flags(&args.argc, args.pointers.data(), Options{});
  EXPECT_EQ(options.dir, "/tmp/store");
  EXPECT_TRUE(options.require_warm);
  EXPECT_FALSE(options.quiet);
  EXPECT_EQ(args.left(),
            (std::vector<std::string>{"prog", "--gtest_filter=A.*", "x", "--gtest_brief=1"}));
  EXPECT_EQ(args.pointers[static_cast<std::size_t>(args.argc)], nullptr);
}

TEST(Options, FlagsOverrideDefaults) {
  Options defaults;
  defaults.require_warm = true;
  defaults.dir = "/from/env";
  Args args({"prog", "--cubby_require_warm=false"});
  const Options options = parse_flags(&args.argc, args.pointers.data(), defaults);
  EXPECT_FALSE(options.require_warm);
  EXPECT_EQ(options.dir, "/from/env");
  EXPECT_EQ(args.argc, 1);
}

TEST(Options, UnknownOrMalformedFlagsAreErrorsThatListTheFlags) {
  for (const char* bad : {"--cubby_warm", "--cubby_dir", "--cubby_dir=", "--cubby_quiet=perhaps",
                          "--cubby_require_warmer"}) {
    SCOPED_TRACE(bad);
    Args args({"prog", bad});
    try {
      (void)parse_flags(&args.argc, args.pointers.data(), Options{});
      ADD_FAILURE() << "expected cubby::Error";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), Errc::invalid_argument);
      EXPECT_NE(std::string(error.what()).find("--cubby_"), std::string::npos);
    }
  }
}

TEST(Options, HelpNamesEveryFlag) {
  const std::string help = flags_help();
  for (const char* flag : {"--cubby_dir", "--cubby_require_warm", "--cubby_quiet"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace cubby::testing
