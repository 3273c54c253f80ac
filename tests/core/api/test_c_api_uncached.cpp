// The C API's programs compiled without the store (core/src/api/c_api.cpp, through cubby.h only):
// each result's reason and detail, the reason table, the process's first detail per reason in
// cubby_stats_json and cubby_uncached_first, a front end's own compiles (cubby_count_uncached),
// and cubby_stats_summary's line. Real NVRTC (no GPU needed).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cubby/cubby.h"

namespace {

namespace fs = std::filesystem;

constexpr const char* kSource = R"(extern "C" __global__ void k(int* out) { *out = 3; })";
// A -Xcudafe option whose effect on the headers read the include plan does not model.
const char* const kOptions[] = {"-Xcudafe", "--no_rtti"};

class CApiUncached : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cubby_test_c_api_uncached_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    ASSERT_EQ(cubby_open(dir_.c_str(), &cache_), CUBBY_OK) << cubby_last_error();
  }
  void TearDown() override {
    cubby_close(cache_);
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  nlohmann::json stats() {
    const char* text = cubby_stats_json(cache_);
    EXPECT_NE(text, nullptr) << cubby_last_error();
    return nlohmann::json::parse(text == nullptr ? "{}" : text);
  }

  fs::path dir_;
  cubby_cache* cache_ = nullptr;
};

TEST(CApiUncachedTable, EveryReasonHasANameALabelAndACounter) {
  ASSERT_GT(cubby_uncached_count(), 0u);
  for (size_t i = 0; i < cubby_uncached_count(); ++i) {
    ASSERT_NE(cubby_uncached_name(i), nullptr);
    EXPECT_NE(std::string(cubby_uncached_label(i)), "");
    EXPECT_NE(std::string(cubby_uncached_what(i)), "");
    EXPECT_STREQ(cubby_uncached_first(cubby_uncached_name(i)) == nullptr ? "(null)" : "ok", "ok");
  }
  EXPECT_EQ(cubby_uncached_name(cubby_uncached_count()), nullptr);
  EXPECT_EQ(cubby_uncached_label(cubby_uncached_count()), nullptr);
  EXPECT_EQ(cubby_uncached_first("no_such_reason"), nullptr);
  EXPECT_NE(std::string(cubby_last_error()).find("no_such_reason"), std::string::npos);
}

// A program with an option the key cannot cover: its result says why, its counter and the
// process's first detail are in the stats JSON, and the summary line names both.
TEST_F(CApiUncached, AResultCompiledWithoutTheStoreSaysWhyAndTheStatsKeepTheFirst) {
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_compile(cache_, kSource, "opt.cu", nullptr, 0, kOptions, 2, "sm_90", &result),
            CUBBY_OK)
      << cubby_last_error();
  EXPECT_STREQ(cubby_result_uncached(result), "unkeyable_option");
  EXPECT_STREQ(cubby_result_uncached_detail(result), "-Xcudafe --no_rtti (program opt.cu)");
  cubby_result_fields fields{};
  fields.size = sizeof fields;
  cubby_result_get_fields(result, &fields);
  EXPECT_STREQ(fields.uncached, "unkeyable_option");
  EXPECT_STREQ(fields.uncached_detail, "-Xcudafe --no_rtti (program opt.cu)");
  cubby_result_free(result);
  ASSERT_EQ(cubby_compile(cache_, kSource, "plain.cu", nullptr, 0, nullptr, 0, "sm_90", &result),
            CUBBY_OK)
      << cubby_last_error();
  EXPECT_STREQ(cubby_result_uncached(result), "");
  EXPECT_STREQ(cubby_result_uncached_detail(result), "");
  cubby_result_free(result);

  EXPECT_STREQ(cubby_uncached_first("unkeyable_option"), "-Xcudafe --no_rtti (program opt.cu)");
  const nlohmann::json json = stats();
  EXPECT_EQ(json.value("programs", 0), 2);
  EXPECT_EQ(json.value("uncached_unkeyable_option", 0), 1);
  ASSERT_TRUE(json.contains("uncached_first")) << json.dump();
  EXPECT_EQ(json["uncached_first"],
            nlohmann::json({{"unkeyable_option", "-Xcudafe --no_rtti (program opt.cu)"}}));
  const char* summary = cubby_stats_summary(json.dump().c_str());
  ASSERT_NE(summary, nullptr) << cubby_last_error();
  EXPECT_NE(std::string(summary).find("\n1 of 2 programs compiled without the store: an option "
                                      "the key cannot cover, first -Xcudafe --no_rtti (program "
                                      "opt.cu)"),
            std::string::npos)
      << summary;
}

TEST_F(CApiUncached, AFrontEndCountsItsOwnCompilesByReasonName) {
  EXPECT_EQ(cubby_count_uncached(cache_, "compiled_elsewhere", "CuPy's own way: jitify"), CUBBY_OK)
      << cubby_last_error();
  EXPECT_EQ(cubby_count_uncached(cache_, "compiled_elsewhere", nullptr), CUBBY_OK);
  EXPECT_EQ(cubby_count_uncached(cache_, "nonsense", "x"), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cubby_last_error()).find("nonsense"), std::string::npos);
  const nlohmann::json json = stats();
  EXPECT_EQ(json.value("uncached_compiled_elsewhere", 0), 2);
  EXPECT_EQ(json.value("programs", 0), 2);
  EXPECT_EQ(json["uncached_first"].value("compiled_elsewhere", ""), "CuPy's own way: jitify");
}

}  // namespace
