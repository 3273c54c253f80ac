// Cache::compile's programs compiled without the store (cubby/stats.hpp, CUBBY_UNCACHED): each is
// counted under its reason, the process keeps the first one's detail, and summaries name both.
// Real NVRTC (no GPU needed).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cubby/cache.hpp"
#include "cubby/stats_summary.hpp"
#include "storage/local/disk.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using testing::count_entries;
using testing::TempDir;

// An include test built from one of several parameters of a #define: the header scan cannot know
// which names its callers probe, so no key covers the program's headers.
constexpr const char* kUnnamedInclude = R"(
#define CUBBY_PROBE(folder, name) __has_include(name)
extern "C" __global__ void k(int* out) { *out = 1; }
)";

constexpr const char* kPlain = R"(extern "C" __global__ void k(int* out) { *out = 2; })";

CompileRequest request_of(const char* source, const std::string& program,
                          std::vector<std::string> options = {}) {
  CompileRequest r;
  r.source = source;
  r.program_name = program;
  r.options = std::move(options);
  r.arch = "sm_90";
  return r;
}

Config config_for(const std::filesystem::path& dir) {
  Config config;
  config.dir = dir;
  return config;
}

std::size_t at(Uncached reason) { return static_cast<std::size_t>(reason); }

bool has_line(const std::vector<std::string>& lines, const std::string& line) {
  for (const std::string& each : lines) {
    if (each == line) return true;
  }
  return false;
}

// Both reasons a key cannot be trusted (a macro-named include test, a -Xcudafe option the plan
// does not model): never looked up or stored, counted per reason among all programs, the first
// program's detail kept for the process, and the summary's line says "N of M ... first ...".
TEST(CacheUncached, ProgramsWithoutATrustworthyKeyAreCountedByReasonWithTheFirstDetail) {
  TempDir dir("uncached");
  Cache cache(config_for(dir.path()));
  const CacheResult first = cache.compile(request_of(kUnnamedInclude, "probe_a.cu"));
  EXPECT_EQ(first.tier, Source::compiled);
  EXPECT_EQ(first.uncached, Uncached::unnamed_include);
  EXPECT_NE(first.uncached_detail.find("__has_include(name)"), std::string::npos)
      << first.uncached_detail;
  EXPECT_NE(first.uncached_detail.find("probe_a.cu"), std::string::npos) << first.uncached_detail;
  EXPECT_EQ(cache.compile(request_of(kUnnamedInclude, "probe_a.cu")).tier, Source::compiled);
  const CacheResult second = cache.compile(request_of(kUnnamedInclude, "probe_b.cu"));
  EXPECT_NE(second.uncached_detail.find("probe_b.cu"), std::string::npos);
  const CacheResult option =
      cache.compile(request_of(kPlain, "option.cu", {"-Xcudafe", "--no_rtti"}));
  EXPECT_EQ(option.uncached, Uncached::unkeyable_option);
  EXPECT_EQ(option.uncached_detail, "-Xcudafe --no_rtti (program option.cu)");
  const CacheResult plain = cache.compile(request_of(kPlain, "plain.cu"));
  EXPECT_EQ(plain.uncached, Uncached::none);
  EXPECT_TRUE(plain.uncached_detail.empty());
  EXPECT_EQ(cache.compile(request_of(kPlain, "plain.cu")).tier, Source::memory);

  const Stats stats = cache.stats();
  EXPECT_EQ(stats.programs, 6u);
  EXPECT_EQ(stats.uncached_unnamed_include, 3u);
  EXPECT_EQ(stats.uncached_unkeyable_option, 1u);
  EXPECT_EQ(stats.misses, 1u);  // only the plain program was looked up and missed
  EXPECT_EQ(stats.compiles, 5u);
  EXPECT_EQ(count_entries(DiskTier(cache.config().dir)), 1u);  // only the plain program's entry

  const UncachedDetails details = uncached_details();
  EXPECT_EQ(details[at(Uncached::unnamed_include)], first.uncached_detail);  // the first, kept
  EXPECT_EQ(details[at(Uncached::unkeyable_option)], option.uncached_detail);
  const std::vector<std::string> lines = summary_lines(stats, details);
  EXPECT_TRUE(has_line(lines,
                       "3 of 6 programs compiled without the store: an include the header "
                       "scan cannot name, first " +
                           first.uncached_detail))
      << ::testing::PrintToString(lines);
  EXPECT_TRUE(has_line(lines,
                       "1 of 6 programs compiled without the store: an option the key cannot "
                       "cover, first -Xcudafe --no_rtti (program option.cu)"))
      << ::testing::PrintToString(lines);
}

// A disabled store compiles every program without it; a read-only one looks each up but stores
// no miss: both counted, so a run that never gets warm says why.
TEST(CacheUncached, DisabledAndReadOnlyStoresCountTheProgramsTheyCompileWithoutStoring) {
  TempDir dir("uncached");
  Config disabled = config_for(dir / "off");
  disabled.disabled = true;
  Cache off(disabled);
  const CacheResult compiled = off.compile(request_of(kPlain, "off.cu"));
  EXPECT_EQ(compiled.uncached, Uncached::store_disabled);
  EXPECT_EQ(compiled.uncached_detail, "program off.cu");
  EXPECT_EQ(off.compile(request_of(kPlain, "off.cu")).tier, Source::compiled);
  EXPECT_EQ(off.stats().uncached_store_disabled, 2u);
  EXPECT_EQ(off.stats().programs, 2u);

  Config read_only = config_for(dir / "ro");
  read_only.read_only = true;
  Cache ro(read_only);
  const CacheResult missed = ro.compile(request_of(kPlain, "ro.cu"));
  EXPECT_EQ(missed.tier, Source::compiled);
  EXPECT_EQ(missed.uncached, Uncached::read_only);
  EXPECT_EQ(ro.stats().uncached_read_only, 1u);
  EXPECT_EQ(ro.stats().misses, 1u);
  EXPECT_EQ(uncached_details()[at(Uncached::read_only)], "program ro.cu");
}

// A front end's own compile (CuPy's) is counted through the Cache too; Uncached::none is not.
TEST(CacheUncached, AFrontEndCountsItsOwnCompilesUnderAReason) {
  TempDir dir("uncached");
  Cache cache(config_for(dir.path()));
  cache.count_uncached(Uncached::compiled_elsewhere, "CuPy's own way: jitify (program j.cu)");
  cache.count_uncached(Uncached::none, "ignored");
  EXPECT_EQ(cache.stats().uncached_compiled_elsewhere, 1u);
  EXPECT_EQ(cache.stats().programs, 1u);
  EXPECT_EQ(uncached_details()[at(Uncached::compiled_elsewhere)],
            "CuPy's own way: jitify (program j.cu)");
}

}  // namespace
}  // namespace cubby
