// Tests for core/src/cuda/include_plan.cpp: NVRTC include options as NVRTC 13 parses them.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "cuda/include_plan.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

TEST(IncludePaths, AllFormsInOrder) {
  const std::vector<std::string> options = {"-std=c++17",
                                            "-I",
                                            "/a",
                                            "-I/b",
                                            "--include-path=/c",
                                            "-DX=1",
                                            "--include-path",
                                            "rel/d",
                                            "-Irel/e",
                                            "--use_fast_math",
                                            "-I=/f"};
  // "-I=/f" is the folder "/f" for NVRTC (checked by compiling with a folder named "=/f" too).
  const std::vector<fs::path> expected = {"/a", "/b", "/c", "rel/d", "rel/e", "/f"};
  EXPECT_EQ(include_paths_from_options(options), expected);
}

TEST(IncludePaths, ValueOfAnOptionWithASeparateValueIsNoIncludePath) {
  // NVRTC reads "-D -I/x" as the macro "-I/x" and "-Xptxas -I/y" as a ptxas option.
  EXPECT_TRUE(include_paths_from_options({"-D", "-I/x", "-Xptxas", "-I/y"}).empty());
  EXPECT_EQ(include_paths_from_options({"-D", "X", "-I/z"}), std::vector<fs::path>{"/z"});
}

TEST(IncludePaths, IgnoresOtherOptionsAndAMissingValue) {
  EXPECT_TRUE(include_paths_from_options({}).empty());
  EXPECT_TRUE(include_paths_from_options({"-DI=1", "--include-pathology", "-arch=sm_90"}).empty());
  EXPECT_TRUE(include_paths_from_options({"-I"}).empty());
  EXPECT_EQ(include_paths_from_options({"-Ix", "--include-path"}), std::vector<fs::path>{"x"});
  // The value after "-I" is taken even if it looks like an option.
  EXPECT_EQ(include_paths_from_options({"-I", "-weird"}), std::vector<fs::path>{"-weird"});
}

TEST(IncludeOptions, EverySpellingParsedAndPassedOnInOneSpelling) {
  const IncludeOptions parsed = parse_include_options(
      {"-include=a.cuh", "-include", "b.cuh", "--pre-include=c.cuh", "--pre-include", "d.cuh", "-I",
       "/i1", "-I/i2", "-I=/i3", "--include-path=/i4", "--include-path", "/i5", "-DX=1", "-D",
       "-include=no.cuh", "-no-source-include", "-std=c++17"});
  EXPECT_EQ(parsed.pre_includes, (std::vector<std::string>{"a.cuh", "b.cuh", "c.cuh", "d.cuh"}));
  EXPECT_EQ(parsed.include_paths, (std::vector<std::string>{"/i1", "/i2", "/i3", "/i4", "/i5"}));
  EXPECT_TRUE(parsed.no_source_include);
  EXPECT_EQ(parsed.nvrtc_options,
            (std::vector<std::string>{
                "--pre-include=a.cuh", "--pre-include=b.cuh", "--pre-include=c.cuh",
                "--pre-include=d.cuh", "--include-path=/i1", "--include-path=/i2",
                "--include-path=/i3", "--include-path=/i4", "--include-path=/i5", "-DX=1", "-D",
                "-include=no.cuh", "-no-source-include", "-std=c++17"}));
  // A trailing option without its value is passed on for NVRTC to reject.
  const IncludeOptions dangling = parse_include_options({"-include"});
  EXPECT_TRUE(dangling.pre_includes.empty());
  EXPECT_EQ(dangling.nvrtc_options, std::vector<std::string>{"-include"});
  EXPECT_FALSE(parse_include_options({"--no-source-include-x"}).no_source_include);
}

// Both spellings NVRTC 13.0 accepts (-Xcudafe X, -Xcudafe=X), checked by compiling; the values
// of all -Xcudafe form one front-end argument list. They were outside the key (issue 23).
TEST(IncludeOptions, CudafeIncludeOptionsEnterThePlan) {
  const std::vector<std::string> options = {"-Xcudafe",
                                            "--preinclude=p1.h",
                                            "-Xcudafe=--preinclude=p2.h",
                                            "-Xcudafe",
                                            "--preinclude",
                                            "-Xcudafe",
                                            "p3.h",
                                            "-Xcudafe",
                                            "--include_directory=/d1",
                                            "-Xcudafe=--sys_include=/d2",
                                            "-Xcudafe",
                                            "--sys_include",
                                            "-Xcudafe",
                                            "/d3",
                                            "-Xcudafe",
                                            "-I/d4",
                                            "-Xcudafe=-I/d5",
                                            "-Xcudafe",
                                            "--diag_suppress=177",
                                            "-Xcudafe",
                                            "--diag_warning",
                                            "-Xcudafe",
                                            "20012"};
  const IncludeOptions parsed = parse_include_options(options);
  EXPECT_EQ(parsed.pre_includes, (std::vector<std::string>{"p1.h", "p2.h", "p3.h"}));
  EXPECT_EQ(parsed.include_paths, (std::vector<std::string>{"/d1", "/d2", "/d3", "/d4", "/d5"}));
  EXPECT_TRUE(parsed.unmodelled.empty());
  EXPECT_EQ(parsed.nvrtc_options, options);  // passed on as given
}

TEST(IncludeOptions, OtherCudafeOptionsAreUnmodelled) {
  const IncludeOptions parsed = parse_include_options(
      {"-Xcudafe", "--use_pch=/x.pch", "-Xcudafe=-I", "-Xcudafe", "--error_output=/tmp/e"});
  EXPECT_EQ(parsed.unmodelled,
            (std::vector<std::string>{"-Xcudafe --use_pch=/x.pch", "-Xcudafe -I"}));
  EXPECT_TRUE(parsed.include_paths.empty());
}

TEST(PlanStillCurrent, OnlyAProgramFolderTakenFromTheWorkingFolderGoesStale) {
  CompileRequest request;
  request.program_name = "k.cu";
  IncludePlan plan = plan_includes(request, {});
  EXPECT_EQ(plan.search.program_dir, fs::current_path().lexically_normal());
  EXPECT_TRUE(plan_still_current(plan, request));
  plan.search.program_dir = "/elsewhere";  // as if the working folder changed since
  EXPECT_FALSE(plan_still_current(plan, request));
  request.options = {"-no-source-include"};  // no program folder is searched: nothing to go stale
  EXPECT_TRUE(plan_still_current(plan_includes(request, {}), request));
}

TEST(IncludeOptions, DefineOptionsAreReadInEverySpellingAndPassedOnVerbatim) {
  const std::vector<std::string> options = {
      "-DA", "-D", "B=<b.h>", "--define-macro=C", "--define-macro", "D(x)=x", "-UA", "-Dnext"};
  const IncludeOptions parsed = parse_include_options(options);
  EXPECT_EQ(parsed.defines, (std::vector<std::string>{"A", "B=<b.h>", "C", "D(x)=x", "next"}));
  EXPECT_EQ(parsed.nvrtc_options, options);
  CompileRequest request;
  request.options = options;
  request.program_name = "k.cu";
  const IncludePlan plan = plan_includes(request, {});
  EXPECT_EQ(plan.search.defines, parsed.defines);
  EXPECT_EQ(plan.search.program_name, "k.cu");
}

// The user folders a plan searches (the toolkit's are covered by its identity, not scanned).
std::vector<fs::path> user_folders(const std::vector<std::string>& options,
                                   const fs::path& toolkit) {
  CompileRequest request;
  request.options = options;
  request.program_name = "/nowhere/k.cu";
  return plan_includes(request, toolkit).search.include_paths;
}

TEST(PlanIncludes, TheToolkitFolderAndALinkIntoItAreNotScannedAndAUserFolderIs) {
  TempDir dir("plan-toolkit");
  const fs::path toolkit = dir.path() / "toolkit" / "include";
  fs::create_directories(toolkit / "sub");
  fs::create_directories(dir.path() / "user");
  fs::create_directory_symlink(toolkit / "sub", dir.path() / "into-toolkit");
  const std::string user = (dir.path() / "user").string();
  EXPECT_EQ(user_folders({"-I" + toolkit.string(), "-I" + user,
                          "-I" + (dir.path() / "into-toolkit").string()},
                         toolkit),
            std::vector<fs::path>{user});
  // The toolkit's folder spelled as NVRTC's own is the toolkit even where it is not (yet) there.
  const fs::path absent = dir.path() / "absent" / "include";
  EXPECT_TRUE(user_folders({"-I" + absent.string()}, absent).empty());
}

// The user folders of `-I<dir>/inc` while inc links into the toolkit's folder (or the user's,
// `toolkit_first` false), then after the link is swapped for one to the other folder.
std::pair<std::vector<fs::path>, std::vector<fs::path>> around_a_link_swap(bool toolkit_first) {
  TempDir dir("plan-swap");
  const fs::path toolkit = dir.path() / "toolkit";
  const fs::path user = dir.path() / "user";
  fs::create_directories(toolkit);
  fs::create_directories(user);
  const fs::path link = dir.path() / "inc";
  fs::create_directory_symlink(toolkit_first ? toolkit : user, link);
  auto before = user_folders({"-I" + link.string()}, toolkit);
  fs::remove(link);
  fs::create_directory_symlink(toolkit_first ? user : toolkit, link);
  return {std::move(before), user_folders({"-I" + link.string()}, toolkit)};
}

TEST(PlanIncludes, ALinkIntoTheToolkitSwappedForAUserFolderIsScannedFromThenOn) {
  const auto [before, after] = around_a_link_swap(true);
  EXPECT_TRUE(before.empty());
  ASSERT_EQ(after.size(), 1u);  // now the user's headers
  EXPECT_EQ(after[0].filename(), "inc");
}

TEST(PlanIncludes, AUserFolderThatLaterLeadsIntoTheToolkitStaysScannedInThisProcess) {
  // Scanning it keys its headers by their contents: a wider key than needed, never a blind one.
  const auto [before, after] = around_a_link_swap(false);
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(after, before);
}

TEST(PlanIncludes, AnAbsoluteProgramNameGivesItsOwnFolderWhateverTheWorkingFolder) {
  CompileRequest request;
  request.program_name = "/dev/null/cupy/../cupy/k.cu";
  EXPECT_EQ(plan_includes(request, {}).search.program_dir, fs::path("/dev/null/cupy"));
}

}  // namespace
}  // namespace cubby
