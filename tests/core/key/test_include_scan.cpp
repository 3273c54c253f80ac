// Tests for core/src/key/include_scan.cpp: the header scan over NVRTC's search order and its memo.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cubby/key.hpp"
#include "key/include_scan.hpp"
#include "key/scan_place.hpp"
#include "key_test_inputs.hpp"
#include "test_support.hpp"
#include "util/hash.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using cubby::testing::base_inputs;
using cubby::testing::read_text;
using cubby::testing::TempDir;
using cubby::testing::unresolved_header;
using cubby::testing::write_text;

// ---------------------------------------------------------------------------------------------
// scan_headers
// ---------------------------------------------------------------------------------------------

// A project: src/ (the source's folder) and inc/ (an include path).
//   source:               "local.cuh", <detail/ops.cuh>, <cuda/std/mdspan>, "missing.cuh", MACRO
//   src/local.cuh         (found in the source's own folder)
//   inc/detail/ops.cuh    includes "helper.cuh" (its own folder) and "cycle_a.cuh" (via -I)
//   inc/detail/helper.cuh
//   inc/cycle_a.cuh <-> inc/cycle_b.cuh
class ScanHeaders : public ::testing::Test {
 protected:
  void SetUp() override {
    write_text(src() / "local.cuh", "#pragma once\nconstexpr int kLocal = 1;\n");
    write_text(inc() / "detail" / "ops.cuh",
               "#pragma once\n#include \"helper.cuh\"\n  #  include \"cycle_a.cuh\" // cycle\n");
    write_text(inc() / "detail" / "helper.cuh", "#pragma once\nconstexpr int kHelper = 2;\n");
    write_text(inc() / "cycle_a.cuh", "#pragma once\n#include \"cycle_b.cuh\"\n");
    write_text(inc() / "cycle_b.cuh", "#pragma once\n#include <cycle_a.cuh>\n");
  }

  fs::path src() const { return dir_.path() / "src"; }
  fs::path inc() const { return dir_.path() / "inc"; }
  std::vector<fs::path> include_paths() const { return {inc()}; }

  std::vector<HeaderDigest> scan() const { return scan_headers(kSource, src(), include_paths()); }

  Key key_of(const std::vector<HeaderDigest>& headers) const {
    KeyInputs in = base_inputs();
    in.source = kSource;
    in.headers = headers;
    return derive_key(in);
  }

  static HeaderDigest digest_of(const std::string& include, const fs::path& file) {
    return HeaderDigest{include, fs::canonical(file).string(), true, hash128(read_text(file))};
  }

  static constexpr const char* kSource =
      "#include \"local.cuh\"   /* own folder */\n"
      "#include <detail/ops.cuh>\n"
      "#include <cuda/std/mdspan>\n"
      "#include \"missing.cuh\"\n"
      "#include KERNEL_HEADER\n"
      "#define STR \"#include \\\"not_a_directive.cuh\\\"\"\n"
      "__global__ void k() {}\n";

  TempDir dir_{"key"};
};

TEST_F(ScanHeaders, FindsQuotedAngledNestedAndCyclicIncludes) {
  const std::vector<HeaderDigest> headers = scan();
  const std::vector<HeaderDigest> expected = {
      unresolved_header("cuda/std/mdspan"),
      digest_of("cycle_a.cuh", inc() / "cycle_a.cuh"),
      digest_of("cycle_b.cuh", inc() / "cycle_b.cuh"),
      digest_of("detail/ops.cuh", inc() / "detail" / "ops.cuh"),
      digest_of("helper.cuh", inc() / "detail" / "helper.cuh"),
      digest_of("local.cuh", src() / "local.cuh"),
      unresolved_header("missing.cuh"),
  };
  EXPECT_EQ(headers, expected);
  for (const auto& h : headers) {
    if (h.resolved) {
      EXPECT_TRUE(fs::path(h.path).is_absolute()) << h.path;
    }
  }
}

TEST_F(ScanHeaders, DirectiveSpellingsAndIgnoredForms) {
  write_text(inc() / "a.cuh", "");
  write_text(inc() / "b.cuh", "");
  write_text(inc() / "c.cuh", "");
  write_text(inc() / "d.cuh", "");
  const std::string source =
      "\t#include\t\"a.cuh\"\r\n"
      "#   include <b.cuh> // trailing comment\n"
      "#include_next \"c.cuh\"\n"
      "#if 0\n#include \"d.cuh\"\n#endif\n"
      "// #include \"commented.cuh\" (not at line start: not a directive)\n"
      "#include MACRO_HEADER\n"
      "#include \"unterminated.cuh\n"
      "#include <>\n"
      "#define X #include \"no.cuh\"\n"
      "#include \"detail\"\n";  // a folder, not a file: unresolved
  std::vector<std::string> includes;
  for (const auto& h : scan_headers(source, fs::path(), include_paths())) {
    includes.push_back(h.include + (h.resolved ? "" : " (unresolved)"));
  }
  EXPECT_EQ(includes,
            (std::vector<std::string>{"a.cuh", "b.cuh", "c.cuh", "d.cuh", "detail (unresolved)"}));
}

// Each spelling NVRTC reads as an include of v.cuh after translation phases 1-3 (each checked by
// compiling with NVRTC 13.0).
TEST_F(ScanHeaders, EverySpellingAfterTranslationPhasesOneToThreeIsFound) {
  write_text(src() / "v.cuh", "constexpr int V = 1;\n");
  const std::vector<std::string> spellings = {
      "#include \"v.cuh\"\n",
      "/**/#include \"v.cuh\"\n",
      "#inc\\\nlude \"v.cuh\"\n",
      "#\\\ninclude \"v.cuh\"\n",
      "#include \"v\\\n.cuh\"\n",
      "#inc\\\r\nlude \"v.cuh\"\r\n",
      "%:include \"v.cuh\"\n",
      "%: include <v.cuh>\n",
      "# /*x*/ include \"v.cuh\"\n",
      "#include/**/\"v.cuh\"\n",
      "/* a multi-line\n comment */ #include \"v.cuh\"\n",
      "int a;\n  /* one\n two */  /* three */# include \"v.cuh\"\n",
      "# /* spans\n lines */ include \"v.cuh\"\n",
      "?\?=include \"v.cuh\"\n",  // the trigraph ??= (C++03/11/14)
      "#if __has_include(\"v.cuh\")\n#endif\n",
      "#if 0\n#include \"v.cuh\"\n#endif\n",
  };
  for (const std::string& spelling : spellings) {
    SCOPED_TRACE(spelling);
    const std::vector<HeaderDigest> headers = scan_headers(spelling, src(), {});
    EXPECT_EQ(headers, std::vector<HeaderDigest>{digest_of("v.cuh", src() / "v.cuh")});
  }
}

// Whether `scan` holds a digest of `include` (found or not).
bool has_header(const HeaderScan& scan, const std::string& include, bool resolved) {
  return std::any_of(scan.headers.begin(), scan.headers.end(), [&](const HeaderDigest& d) {
    return d.include == include && d.resolved == resolved;
  });
}

TEST_F(ScanHeaders, AComputedIncludeResolvesToEveryHeaderItsDefinitionsCanName) {
  // thrust's pattern: a chain of object-like macros, the last one chosen by #if.
  write_text(inc() / "config.cuh",
             "#if defined(USE_OMP)\n#define NS omp\n#elif 1\n#define NS cuda\n#endif\n"
             "#define ROOT sys/NS\n");
  write_text(inc() / "outer.cuh",
             "#include \"config.cuh\"\n#define TAG_HEADER <ROOT/tag.cuh>\n#include TAG_HEADER\n"
             "#define H \"inner.cuh\"\n#include H\n");
  write_text(inc() / "inner.cuh", "#pragma once\n");
  write_text(inc() / "sys" / "cuda" / "tag.cuh", "#pragma once\n");
  IncludeSearch search;
  search.program_dir = src();
  search.include_paths = include_paths();
  const HeaderScan scan = scan_includes("#include <outer.cuh>\n", search);
  EXPECT_TRUE(scan.unresolvable.empty()) << scan.unresolvable.front();
  EXPECT_TRUE(has_header(scan, "inner.cuh", true));
  EXPECT_TRUE(has_header(scan, "sys/cuda/tag.cuh", true));
  EXPECT_TRUE(has_header(scan, "sys/omp/tag.cuh", false));  // every #if branch's definition
  // The other branch's header appears: the scan (and so the key) changes.
  write_text(inc() / "sys" / "omp" / "tag.cuh", "#pragma once\n");
  EXPECT_TRUE(has_header(scan_includes("#include <outer.cuh>\n", search), "sys/omp/tag.cuh", true));
}

TEST_F(ScanHeaders, DefineOptionsAndTheSourcesOwnDefinitionsNameHeaders) {
  write_text(inc() / "pick.cuh", "#if __has_include(OPTIONAL)\n#endif\n#include CONFIG\n");
  for (const char* name : {"a.cuh", "b.cuh", "c.cuh", "opt.cuh"}) write_text(inc() / name, "");
  IncludeSearch search;
  search.program_dir = src();
  search.include_paths = include_paths();
  const std::string source = "#include <pick.cuh>\n__global__ void k() {}\n";
  const HeaderScan none = scan_includes(source, search);
  EXPECT_FALSE(has_header(none, "a.cuh", true));
  const HeaderScan by_source = scan_includes("#define CONFIG \"a.cuh\"\n" + source, search);
  EXPECT_TRUE(has_header(by_source, "a.cuh", true));
  EXPECT_FALSE(has_header(by_source, "b.cuh", true));
  search.defines = {"CONFIG=<b.cuh>", "OPTIONAL=\"opt.cuh\""};
  const HeaderScan by_option = scan_includes(source, search);
  EXPECT_TRUE(has_header(by_option, "b.cuh", true));
  EXPECT_TRUE(has_header(by_option, "opt.cuh", true));
  EXPECT_FALSE(has_header(by_option, "a.cuh", true));
  search.defines = {"CONFIG=<c.cuh>"};
  EXPECT_TRUE(has_header(scan_includes(source, search), "c.cuh", true));
}

TEST_F(ScanHeaders, AnUnboundedComputedIncludeIsCoveredByItsFolderTreesFingerprints) {
  // Each level doubles the expansion and has two definitions: no bound.
  std::string defines;
  for (int level = 0; level < 20; ++level) {
    const std::string next = "M" + std::to_string(level + 1);
    defines += "#define M" + std::to_string(level) + " " + next + " " + next + "\n";
    defines += "#define M" + std::to_string(level) + " <" + next + ".cuh>\n";
  }
  write_text(inc() / "lib" / "grow.cuh", defines + "#include M0\n");
  write_text(inc() / "lib" / "deep" / "reached.cuh", "int v = 1;\n");
  IncludeSearch search;
  search.include_paths = include_paths();
  const std::string source = "#include <lib/grow.cuh>\n";
  const HeaderScan scan = scan_includes(source, search);
  EXPECT_TRUE(scan.unresolvable.empty()) << scan.unresolvable.front();
  const auto tree_of = [](const HeaderScan& found, const fs::path& folder) {
    for (const HeaderDigest& d : found.headers) {
      if (d.include == kFolderTreeInclude && d.path == folder.string()) return d.content_hash;
    }
    ADD_FAILURE() << "no tree digest for " << folder;
    return std::array<std::uint8_t, 16>{};
  };
  const auto before = tree_of(scan, inc());
  tree_of(scan, inc() / "lib");
  // Any file of the tree, edited, changes the fingerprint (the scan is not memoized).
  write_text(inc() / "lib" / "deep" / "reached.cuh", "int v = 2;\n");
  EXPECT_NE(tree_of(scan_includes(source, search), inc()), before);

  // A tree too large to fingerprint: the include stays unresolvable, said with file and line.
  for (int i = 0; i < 5'001; ++i) write_text(inc() / "many" / (std::to_string(i) + ".h"), "");
  const HeaderScan large = scan_includes(source, search);
  ASSERT_EQ(large.unresolvable.size(), 1u);
  const std::string expected_start =
      fs::canonical(inc() / "lib" / "grow.cuh").string() + ":41: #include M0: ";
  EXPECT_TRUE(large.unresolvable[0].starts_with(expected_start)) << large.unresolvable[0];
  EXPECT_NE(large.unresolvable[0].find("more than 5000 files"), std::string::npos)
      << large.unresolvable[0];
}

TEST_F(ScanHeaders, WhatTheScanStillCannotNameIsSaidWithFileAndLine) {
  write_text(inc() / "alias.cuh", "#pragma once\n#define HI __has_include\n");
  IncludeSearch search;
  search.program_dir = src();
  search.include_paths = include_paths();
  search.program_name = "kernels/prog.cu";
  const HeaderScan scan = scan_includes("#include <alias.cuh>\n", search);
  ASSERT_EQ(scan.unresolvable.size(), 1u);
  EXPECT_TRUE(scan.unresolvable[0].starts_with(fs::canonical(inc() / "alias.cuh").string() +
                                               ":2: __has_include: "))
      << scan.unresolvable[0];
  const HeaderScan own = scan_includes("\n#define HI2 __has_include\n", search);
  ASSERT_EQ(own.unresolvable.size(), 1u);
  EXPECT_TRUE(own.unresolvable[0].starts_with("kernels/prog.cu:2: __has_include: "))
      << own.unresolvable[0];
}

// CCCL's `#define _CCCL_HAS_INCLUDE(_X) __has_include(_X)`, defined in one header and called in
// others: the headers its calls name are the program's, as a __has_include of each caller.
TEST_F(ScanHeaders, AnIncludeTestMacroDefinedInOneHeaderCountsTheHeadersItsCallersName) {
  write_text(inc() / "pre.cuh",
             "#ifdef __has_include\n#define HAS(_X) __has_include(_X)\n#endif\n"
             "#define ALSO(h) HAS(h)\n");
  write_text(inc() / "user.cuh",
             "#include \"pre.cuh\"\n#if HAS(<detail/helper.cuh>)\n#endif\n"
             "#if ALSO(\"maybe.cuh\")\n#endif\n");
  IncludeSearch search;
  search.program_dir = src();
  search.include_paths = include_paths();
  const HeaderScan scan = scan_includes("#include <user.cuh>\n", search);
  EXPECT_TRUE(scan.unresolvable.empty()) << scan.unresolvable.front();
  const auto has = [](const HeaderScan& found, const std::string& include, bool resolved) {
    return std::any_of(found.headers.begin(), found.headers.end(), [&](const HeaderDigest& d) {
      return d.include == include && d.resolved == resolved;
    });
  };
  EXPECT_TRUE(has(scan, "detail/helper.cuh", true));
  EXPECT_TRUE(has(scan, "maybe.cuh", false));
  // The header the test looks for appears: the scan (and so the key) changes.
  write_text(inc() / "maybe.cuh", "#pragma once\n");
  EXPECT_TRUE(has(scan_includes("#include <user.cuh>\n", search), "maybe.cuh", true));
  // A macro operand is expanded; a macro passing one of several parameters on cannot be resolved.
  EXPECT_TRUE(has(scan_includes("#include <user.cuh>\n#define WHICH <detail/helper.cuh>\n"
                                "#if HAS(WHICH)\n#endif\n",
                                search),
                  "detail/helper.cuh", true));
  write_text(inc() / "two.cuh", "#include \"pre.cuh\"\n#define TWO(a, b) HAS(b)\n");
  EXPECT_EQ(scan_includes("#include <two.cuh>\n", search).unresolvable.size(), 1u);
}

TEST_F(ScanHeaders, PreIncludedFilesAndTheirIncludesAreScannedFromTheWorkingFolderThenPaths) {
  write_text(inc() / "pre.cuh", "#include \"detail/helper.cuh\"\n");
  write_text(dir_.path() / "cwd_pre.cuh", "");
  const fs::path old_cwd = fs::current_path();
  fs::current_path(dir_.path());
  IncludeSearch search;
  search.include_paths = include_paths();
  search.pre_includes = {"pre.cuh", "cwd_pre.cuh"};
  const HeaderScan scan = scan_includes("", search);
  fs::current_path(old_cwd);
  EXPECT_EQ(scan.headers, (std::vector<HeaderDigest>{
                              digest_of("cwd_pre.cuh", dir_.path() / "cwd_pre.cuh"),
                              digest_of("detail/helper.cuh", inc() / "detail" / "helper.cuh"),
                              digest_of("pre.cuh", inc() / "pre.cuh"),
                          }));
}

TEST_F(ScanHeaders, SortedAndDeduplicated) {
  // The same header included twice, from the source and from two headers.
  write_text(inc() / "x.cuh", "#include \"detail/helper.cuh\"\n");
  write_text(inc() / "y.cuh", "#include \"detail/helper.cuh\"\n#include \"missing.cuh\"\n");
  const std::string source =
      "#include \"y.cuh\"\n#include \"x.cuh\"\n#include \"detail/helper.cuh\"\n"
      "#include \"missing.cuh\"\n#include \"missing.cuh\"\n";
  const std::vector<HeaderDigest> headers = scan_headers(source, src(), include_paths());
  ASSERT_EQ(headers.size(), 4u);
  EXPECT_EQ(headers[0].include, "detail/helper.cuh");
  EXPECT_EQ(headers[1].include, "missing.cuh");
  EXPECT_FALSE(headers[1].resolved);
  EXPECT_EQ(headers[2].include, "x.cuh");
  EXPECT_EQ(headers[3].include, "y.cuh");
}

TEST_F(ScanHeaders, AbsoluteIncludeAndEmptySourceDir) {
  const fs::path abs = inc() / "detail" / "helper.cuh";
  const std::string source = "#include \"" + abs.string() + "\"\n#include \"local.cuh\"\n";
  const std::vector<HeaderDigest> headers = scan_headers(source, fs::path(), include_paths());
  ASSERT_EQ(headers.size(), 2u);
  EXPECT_EQ(headers[0], digest_of(abs.string(), abs));
  // Without a source folder, src/local.cuh is not a candidate.
  EXPECT_EQ(headers[1], unresolved_header("local.cuh"));
}

TEST_F(ScanHeaders, ShadowingHeaderInAnEarlierFolderIsRecorded) {
  const std::vector<HeaderDigest> before = scan();
  // src/ is searched before inc/: src/detail/ops.cuh would shadow inc/detail/ops.cuh.
  write_text(src() / "detail" / "ops.cuh", "#pragma once\n");
  const std::vector<HeaderDigest> after = scan();
  EXPECT_NE(before, after);
  EXPECT_NE(key_of(before), key_of(after));
  const auto count = std::count_if(after.begin(), after.end(), [](const HeaderDigest& h) {
    return h.include == "detail/ops.cuh" && h.resolved;
  });
  EXPECT_EQ(count, 2);
  EXPECT_NE(std::find(after.begin(), after.end(),
                      digest_of("detail/ops.cuh", src() / "detail" / "ops.cuh")),
            after.end());

  // A header next to the including header and one of the same name in an include path: both.
  write_text(inc() / "helper.cuh", "#pragma once\n");
  const std::vector<HeaderDigest> both = scan();
  EXPECT_NE(std::find(both.begin(), both.end(), digest_of("helper.cuh", inc() / "helper.cuh")),
            both.end());
  EXPECT_NE(
      std::find(both.begin(), both.end(), digest_of("helper.cuh", inc() / "detail" / "helper.cuh")),
      both.end());
}

// Issue 23: with -Iinc and <cuda/std/version>, creating inc/version changed what NVRTC compiles
// (the toolkit header includes <version>, found in inc/ first) but not the key.
TEST(ScanIncludes, AUserFolderShadowingANameTheToolkitIncludesIsRecorded) {
  TempDir dir("scan-toolkit-shadow");
  const fs::path toolkit = dir / "toolkit" / "include";
  write_text(toolkit / "cuda" / "std" / "version", "#include <version>\n#include \"detail.h\"\n");
  write_text(toolkit / "cuda" / "std" / "detail.h", "#if _CCCL_HAS_INCLUDE(<probe.h>)\n#endif\n");
  write_text(toolkit / "version", "#pragma once\n");
  write_text(dir / "inc" / "unrelated.h", "\n");  // an empty include path needs no lookups
  IncludeSearch search;
  search.include_paths = {dir / "inc"};
  search.toolkit_dirs = {toolkit};
  const std::string source = "#include <cuda/std/version>\n";
  const HeaderScan before = scan_includes(source, search, ScanPlace(dir / "names"));
  std::vector<fs::path> kept;
  for (const auto& item : fs::directory_iterator(dir / "names")) {
    if (item.path().filename().string().starts_with("toolkit-names-")) kept.push_back(item.path());
  }
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_TRUE(kept[0].filename().string().starts_with("toolkit-names-"));
  EXPECT_EQ(read_text(kept[0]), "cuda/std/version\ndetail.h\nprobe.h\nversion\nend\n");
  for (const HeaderDigest& h : before.headers) EXPECT_FALSE(h.resolved) << h.include;
  for (const char* name : {"version", "detail.h", "probe.h", "cuda/std/version"}) {
    SCOPED_TRACE(name);
    write_text(dir / "inc" / name, "#define SHADOW 1\n");
    const HeaderScan after = scan_includes(source, search);
    EXPECT_NE(std::find(after.headers.begin(), after.headers.end(),
                        HeaderDigest{name, (dir / "inc" / name).string(), true,
                                     hash128("#define SHADOW 1\n")}),
              after.headers.end());
    fs::remove(dir / "inc" / name);
  }
  EXPECT_EQ(scan_includes(source, search).headers, before.headers);
}

TEST(ScanIncludes, ANameAddedToAFolderWhoseListingIsMemoizedIsFoundByTheNextScan) {
  // Folders older than the too-new window have their listings memoized (a name their listing
  // lacks costs no stat): adding a name changes the folder's mtime and ctime.
  TempDir dir("scan-listing");
  write_text(dir / "inc1" / "other.h", "\n");
  write_text(dir / "inc2" / "a.h", "#include \"sub/b.h\"\n");
  write_text(dir / "inc2" / "sub" / "b.h", "\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  const std::vector<fs::path> paths = {dir / "inc1", dir / "inc2"};
  const auto paths_of = [&] {
    std::vector<std::string> found;
    for (const HeaderDigest& h : scan_headers("#include <a.h>\n", {}, paths)) {
      if (h.resolved) found.push_back(fs::relative(h.path, dir.path()).string());
    }
    return found;
  };
  EXPECT_EQ(paths_of(), (std::vector<std::string>{"inc2/a.h", "inc2/sub/b.h"}));
  EXPECT_EQ(paths_of(), (std::vector<std::string>{"inc2/a.h", "inc2/sub/b.h"}));  // memoized
  write_text(dir / "inc1" / "a.h", "\n");
  EXPECT_EQ(paths_of(), (std::vector<std::string>{"inc1/a.h", "inc2/a.h", "inc2/sub/b.h"}));
  write_text(dir / "inc1" / "sub" / "b.h", "\n");
  EXPECT_EQ(paths_of(),
            (std::vector<std::string>{"inc1/a.h", "inc2/a.h", "inc1/sub/b.h", "inc2/sub/b.h"}));
}

TEST_F(ScanHeaders, SecondIncludePathIsSearchedToo) {
  const fs::path other = dir_.path() / "other";
  write_text(other / "detail" / "ops.cuh", "#pragma once\n");
  const std::vector<HeaderDigest> one = scan();
  const std::vector<HeaderDigest> two = scan_headers(kSource, src(), {inc(), other});
  EXPECT_EQ(two.size(), one.size() + 1);
  EXPECT_NE(
      std::find(two.begin(), two.end(), digest_of("detail/ops.cuh", other / "detail" / "ops.cuh")),
      two.end());
}

// The scan asks once per folder whether a candidate's folder is one (is_folder): an include path
// that is a link to a folder is searched, one that is a file is not, and a folder that appears
// between two scans is searched by the second.
TEST_F(ScanHeaders, IncludePathsThatAreLinksFilesOrNewFoldersResolveAsTheirFilesDo) {
  const fs::path link = dir_.path() / "link";
  fs::create_directory_symlink(inc(), link);
  const fs::path file = dir_.path() / "file";
  write_text(file, "not a folder\n");
  const fs::path later = dir_.path() / "later";
  const std::vector<HeaderDigest> first = scan_headers(kSource, src(), {file, link, later});
  EXPECT_EQ(first, scan_headers(kSource, src(), {link}));
  EXPECT_NE(std::find_if(
                first.begin(), first.end(),
                [](const HeaderDigest& h) { return h.include == "detail/ops.cuh" && h.resolved; }),
            first.end());
  write_text(later / "detail" / "ops.cuh", "#pragma once\n");
  const std::vector<HeaderDigest> second = scan_headers(kSource, src(), {file, link, later});
  EXPECT_NE(std::find(second.begin(), second.end(),
                      digest_of("detail/ops.cuh", later / "detail" / "ops.cuh")),
            second.end());
}

// A found header's path is its canonical one (realpath's) however it was reached: through a linked
// folder, as a link to a file elsewhere (whose own includes are then searched beside the real
// file too), through "..", or under an include path that is itself a link. The scan takes a
// folder's canonical path once and adds the name when the name is no link.
TEST_F(ScanHeaders, FoundHeadersHaveTheirCanonicalPathThroughLinkedFoldersLinkedFilesAndDotDot) {
  const fs::path real = dir_.path() / "real";
  write_text(real / "r.h", "#pragma once\n#include \"near.h\"\n");
  write_text(real / "solo.h", "#pragma once\n#include \"beside_real.h\"\n");
  write_text(real / "near.h", "#pragma once\n");
  write_text(real / "beside_real.h", "#pragma once\n");
  write_text(inc() / "up.h", "#pragma once\n");
  fs::create_directories(inc() / "sub");
  fs::create_directory_symlink(real, inc() / "lf");
  fs::create_symlink(real / "solo.h", inc() / "fl.h");
  const fs::path linked_inc = dir_.path() / "linked_inc";
  fs::create_directory_symlink(inc(), linked_inc);
  const std::string source =
      "#include <lf/r.h>\n#include <fl.h>\n#include <sub/../up.h>\n#include <cycle_a.cuh>\n";
  const std::vector<HeaderDigest> found = scan_headers(source, src(), {linked_inc});
  std::vector<std::string> paths;
  for (const HeaderDigest& h : found) {
    if (!h.resolved) continue;
    EXPECT_EQ(h.path, fs::canonical(h.path).string()) << h.include;
    paths.push_back(h.path);
  }
  for (const fs::path& expected :
       {real / "r.h", real / "near.h", real / "solo.h", real / "beside_real.h", inc() / "up.h",
        inc() / "cycle_a.cuh", inc() / "cycle_b.cuh"}) {
    EXPECT_NE(std::find(paths.begin(), paths.end(), fs::canonical(expected).string()), paths.end())
        << expected;
  }
}

TEST_F(ScanHeaders, EditingAHeaderChangesTheKeyAndUntouchedKeepsIt) {
  const std::vector<HeaderDigest> first = scan();
  const Key key1 = key_of(first);
  // Untouched: same digests, same key (warm, memoized).
  const std::vector<HeaderDigest> again = scan();
  EXPECT_EQ(again, first);
  EXPECT_EQ(key_of(again), key1);

  // Edit a nested header reached through -I.
  write_text(inc() / "detail" / "helper.cuh", "#pragma once\nconstexpr int kHelper = 3;\n");
  const std::vector<HeaderDigest> edited = scan();
  EXPECT_NE(key_of(edited), key1);
  const auto helper = std::find_if(edited.begin(), edited.end(),
                                   [](const HeaderDigest& h) { return h.include == "helper.cuh"; });
  ASSERT_NE(helper, edited.end());
  EXPECT_EQ(helper->content_hash, hash128(read_text(inc() / "detail" / "helper.cuh")));

  // A header that now includes a new one: the new one enters the list.
  write_text(inc() / "extra.cuh", "");
  write_text(inc() / "cycle_b.cuh",
             "#pragma once\n#include <cycle_a.cuh>\n#include \"extra.cuh\"\n");
  const std::vector<HeaderDigest> extended = scan();
  EXPECT_NE(
      std::find(extended.begin(), extended.end(), digest_of("extra.cuh", inc() / "extra.cuh")),
      extended.end());
}

void set_mtime(const fs::path& file, std::int64_t seconds, long nanoseconds) {
  struct timespec times[2];
  times[0].tv_sec = seconds;
  times[0].tv_nsec = nanoseconds;
  times[1] = times[0];
  ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), times, 0), 0);
}

TEST_F(ScanHeaders, MemoNoticesEdits) {
  const fs::path file = inc() / "detail" / "helper.cuh";
  set_mtime(file, 1700000000, 0);
  const std::string source = "#include <detail/helper.cuh>\n";
  const auto hash_now = [&] {
    const std::vector<HeaderDigest> headers = scan_headers(source, src(), include_paths());
    EXPECT_EQ(headers.size(), 1u);
    return headers.empty() ? std::array<std::uint8_t, 16>{} : headers.front().content_hash;
  };
  const auto h1 = hash_now();
  EXPECT_EQ(h1, hash128(read_text(file)));
  EXPECT_EQ(hash_now(), h1);  // memoized

  // New content, new size (mtime forced back to the old value).
  write_text(file, "constexpr int kHelper = 22;\n");
  set_mtime(file, 1700000000, 0);
  const auto h2 = hash_now();
  EXPECT_NE(h2, h1);
  EXPECT_EQ(h2, hash128(read_text(file)));

  // New content, same size, mtime bumped by one nanosecond.
  write_text(file, "constexpr int kHelper = 33;\n");
  set_mtime(file, 1700000000, 1);
  const auto h3 = hash_now();
  EXPECT_NE(h3, h2);
  EXPECT_EQ(h3, hash128(read_text(file)));

  // Replaced by another file (rename over it), same size.
  write_text(inc() / "replacement.tmp", "constexpr int kHelper = 44;\n");
  fs::rename(inc() / "replacement.tmp", file);
  const auto h4 = hash_now();
  EXPECT_NE(h4, h3);
  EXPECT_EQ(h4, hash128(read_text(file)));
}

TEST_F(ScanHeaders, ConcurrentScansAgree) {
  const std::vector<HeaderDigest> expected = scan();
  std::vector<std::vector<HeaderDigest>> results(4);
  std::vector<std::thread> threads;
  for (auto& result : results) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        result = scan();
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (const auto& result : results) {
    EXPECT_EQ(result, expected);
  }
}

// ---------------------------------------------------------------------------------------------
// The scan record (scan_record.hpp) between processes; forget_header_scans() and a new place play
// a new process. The memo of whole scans is off: no scan is booked (scan_book.hpp), so every
// fresh scan walks its headers through the record.
// ---------------------------------------------------------------------------------------------

class ScanRecordAcrossProcesses : public ScanHeaders {
 protected:
  void SetUp() override {
    ScanHeaders::SetUp();
    ::setenv("CUBBY_SCAN_WATCH", "0", 1);
    forget_header_scans();
  }
  void TearDown() override {
    ::unsetenv("CUBBY_SCAN_WATCH");
    forget_header_scans();
  }
  // The store's tmp/ folder, every file recorded however new (too_new_ns 0) unless told.
  void use_record(std::int64_t too_new_ns = 0) {
    place_ = std::make_unique<ScanPlace>(store(), too_new_ns);
  }
  void use_no_record() { place_ = std::make_unique<ScanPlace>(); }
  fs::path store() const { return dir_.path() / "store" / "tmp"; }
  // A scan in a new process (a new place reads the record anew): how many headers it read, and
  // what it found.
  std::vector<HeaderDigest> scan_fresh(std::uint64_t& read) {
    forget_header_scans();
    place_ = std::make_unique<ScanPlace>(place_->folder(), place_->too_new_ns());
    const std::uint64_t before = header_files_read();
    std::vector<HeaderDigest> headers = scan_headers(kSource, src(), include_paths(), *place_);
    read = header_files_read() - before;
    return headers;
  }
  std::unique_ptr<ScanPlace> place_ = std::make_unique<ScanPlace>();
};

TEST_F(ScanRecordAcrossProcesses, ALaterProcessReadsNoHeaderAndFindsTheSame) {
  std::uint64_t read = 0;
  const std::vector<HeaderDigest> without = scan_fresh(read);
  EXPECT_EQ(read, 5u);  // local.cuh, ops.cuh, helper.cuh, cycle_a.cuh, cycle_b.cuh
  use_record();
  EXPECT_EQ(scan_fresh(read), without);
  EXPECT_GT(read, 0u);
  EXPECT_TRUE(fs::exists(scan_record_file(store())));
  EXPECT_EQ(scan_fresh(read), without);
  EXPECT_EQ(read, 0u);
}

TEST_F(ScanRecordAcrossProcesses, AnEditOfTheSameSizeWithItsMtimeSetBackIsReadAgain) {
  // ccache's classic trap: same size, same mtime, other bytes; only the ctime tells.
  const fs::path file = inc() / "detail" / "helper.cuh";
  write_text(file, "constexpr int kHelper = 11;\n");
  set_mtime(file, 1700000000, 0);
  use_record();
  std::uint64_t read = 0;
  scan_fresh(read);
  scan_fresh(read);
  ASSERT_EQ(read, 0u);  // recorded
  write_text(file, "constexpr int kHelper = 22;\n");
  set_mtime(file, 1700000000, 0);
  const std::vector<HeaderDigest> after = scan_fresh(read);
  EXPECT_EQ(read, 1u);
  EXPECT_NE(std::find(after.begin(), after.end(), digest_of("helper.cuh", file)), after.end());
}

TEST_F(ScanRecordAcrossProcesses, AHeaderChangedWithinTheTooNewWindowIsNotRecorded) {
  use_record(ScanRecord::kTooNewNs);  // every header here was written just now
  std::uint64_t read = 0;
  const std::vector<HeaderDigest> first = scan_fresh(read);
  const std::uint64_t read_first = read;
  EXPECT_EQ(scan_fresh(read), first);
  EXPECT_EQ(read, read_first);
  EXPECT_FALSE(fs::exists(scan_record_file(store())));
}

TEST_F(ScanRecordAcrossProcesses, ACorruptRecordIsIgnored) {
  use_record();
  std::uint64_t read = 0;
  const std::vector<HeaderDigest> expected = scan_fresh(read);
  // Another content hash for helper.cuh, the checksum left as it was: a flipped bit on disk.
  const std::string helper = fs::canonical(inc() / "detail" / "helper.cuh").string();
  std::string bytes = read_text(scan_record_file(store()));
  const std::size_t at = bytes.find(helper);
  ASSERT_NE(at, std::string::npos);
  bytes[at + helper.size() + 40] ^= 1;  // after dev, ino, size, mtime, ctime: the hash
  write_text(scan_record_file(store()), bytes);
  EXPECT_EQ(scan_fresh(read), expected);
  EXPECT_EQ(read, 5u);  // the record was ignored whole
  EXPECT_EQ(scan_fresh(read), expected);
  EXPECT_EQ(read, 0u);  // and rewritten
}

TEST_F(ScanRecordAcrossProcesses, AStoreThatCannotBeWrittenScansAsWithoutOne) {
  write_text(dir_.path() / "store", "a file where the store's folder should be");
  use_record();
  std::uint64_t read = 0;
  const std::vector<HeaderDigest> headers = scan_fresh(read);
  use_no_record();
  EXPECT_EQ(scan_fresh(read), headers);
}

}  // namespace
}  // namespace cubby
