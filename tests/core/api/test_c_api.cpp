// Tests of the C API (core/src/api/c_api*.cpp), through cubby.h only.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cubby/cubby.h"

namespace {

namespace fs = std::filesystem;

constexpr const char* kSource = R"(
namespace ns {
template <typename T, int N>
__global__ void scale(T* data, T factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) data[i] *= factor;
}
}  // namespace ns
__device__ int counter;
)";

constexpr const char* kBadSource = R"(
__global__ void broken(float* data) { data[0] = undeclared_symbol; }
)";

const char* const kNames[] = {"ns::scale<float, 256>", "ns::scale<double, 64>", "&counter"};
constexpr size_t kNameCount = 3;
const char* const kOptions[] = {"-std=c++17"};
constexpr size_t kOptionCount = 1;
constexpr const char* kArch = "sm_90";

fs::path unique_temp_dir() {
  static std::atomic<int> counter{0};
  fs::path dir = fs::temp_directory_path() / ("cubby_test_c_api_" + std::to_string(::getpid()) +
                                              "_" + std::to_string(counter++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

class CApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = unique_temp_dir();
    ASSERT_EQ(cubby_open(dir_.c_str(), &cache_), CUBBY_OK) << cubby_last_error();
    ASSERT_NE(cache_, nullptr);
  }
  void TearDown() override {
    cubby_close(cache_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  int compile(cubby_cache* cache, cubby_result** out, const char* source = kSource) {
    return cubby_compile(cache, source, "scale.cu", kNames, kNameCount, kOptions, kOptionCount,
                         kArch, out);
  }

  nlohmann::json stats(cubby_cache* cache) {
    const char* text = cubby_stats_json(cache);
    EXPECT_NE(text, nullptr) << cubby_last_error();
    return nlohmann::json::parse(text == nullptr ? "{}" : text);
  }

  fs::path dir_;
  cubby_cache* cache_ = nullptr;
};

// cubby_stats_summary goes through the C API's error wrapper as every entry point does: a NULL
// argument is refused naming it, bad JSON is refused saying so; NULL back, the last error set.
TEST(CApi, StatsSummaryRefusesWhatItCannotReadNamingIt) {
  EXPECT_EQ(cubby_stats_summary(nullptr), nullptr);
  EXPECT_NE(std::string(cubby_last_error()).find("cubby_stats_summary: stats_json is NULL"),
            std::string::npos)
      << cubby_last_error();
  EXPECT_EQ(cubby_stats_summary("{"), nullptr);
  EXPECT_NE(std::string(cubby_last_error()).find("stats_json is not JSON"), std::string::npos)
      << cubby_last_error();
  const char* text = cubby_stats_summary(R"({"misses": 3})");
  ASSERT_NE(text, nullptr) << cubby_last_error();
  EXPECT_NE(std::string(text).find("misses: 3"), std::string::npos) << text;
}

TEST(CApi, VersionIsNonEmpty) {
  const char* version = cubby_version();
  ASSERT_NE(version, nullptr);
  EXPECT_GT(std::strlen(version), 0u);
  EXPECT_NE(std::strchr(version, '.'), nullptr);
}

// One entry, asked for in two orders (a duplicate too): each result lists the names as asked.
TEST_F(CApiTest, NamesComeBackInRequestOrder) {
  const char* const reordered[] = {"&counter", "ns::scale<double, 64>", "&counter",
                                   "ns::scale<float, 256>"};
  cubby_result* first = nullptr;
  ASSERT_EQ(compile(cache_, &first), CUBBY_OK) << cubby_last_error();
  cubby_result* second = nullptr;
  ASSERT_EQ(cubby_compile(cache_, kSource, "scale.cu", reordered, 4, kOptions, kOptionCount, kArch,
                          &second),
            CUBBY_OK)
      << cubby_last_error();
  EXPECT_EQ(cubby_result_hit(second), 1);  // the same key: the set of expressions is the same
  EXPECT_STREQ(cubby_result_key(second), cubby_result_key(first));
  ASSERT_EQ(cubby_result_name_count(second), kNameCount);
  EXPECT_STREQ(cubby_result_name_expression(second, 0), "&counter");
  EXPECT_STREQ(cubby_result_name_expression(second, 1), "ns::scale<double, 64>");
  EXPECT_STREQ(cubby_result_name_expression(second, 2), "ns::scale<float, 256>");
  EXPECT_STREQ(cubby_result_lowered_name(second, 0), "counter");
  for (size_t i = 0; i < kNameCount; ++i) {
    EXPECT_STREQ(cubby_result_name_expression(first, i), kNames[i]);
    EXPECT_STREQ(cubby_result_lowered_name_of(second, kNames[i]),
                 cubby_result_lowered_name(first, i));
  }
  cubby_result_free(first);
  cubby_result_free(second);
}

// cubby_result_get_fields gives what the single accessors give; a caller's smaller struct (an
// older binding) gets only the fields that fit.
TEST_F(CApiTest, ResultFieldsAreTheAccessorsInOneCall) {
  cubby_result* result = nullptr;
  ASSERT_EQ(compile(cache_, &result), CUBBY_OK) << cubby_last_error();
  cubby_result_fields fields{};
  fields.size = sizeof fields;
  cubby_result_get_fields(result, &fields);
  EXPECT_EQ(fields.size, sizeof fields);
  EXPECT_STREQ(fields.key, cubby_result_key(result));
  EXPECT_EQ(fields.hit, cubby_result_hit(result));
  EXPECT_STREQ(fields.tier, cubby_result_tier(result));
  EXPECT_STREQ(fields.payload_kind, cubby_result_payload_kind(result));
  size_t size = 0;
  EXPECT_EQ(fields.payload, cubby_result_payload(result, &size));
  EXPECT_EQ(fields.payload_size, size);
  EXPECT_GT(size, 0u);
  EXPECT_EQ(fields.name_count, cubby_result_name_count(result));
  EXPECT_STREQ(fields.log, cubby_result_log(result));
  EXPECT_EQ(fields.compile_ms, cubby_result_compile_ms(result));
  EXPECT_EQ(fields.elapsed_ms, cubby_result_elapsed_ms(result));

  cubby_result_fields older{};
  older.size = offsetof(cubby_result_fields, hit);  // size and key only
  older.tier = "untouched";
  cubby_result_get_fields(result, &older);
  EXPECT_EQ(older.size, offsetof(cubby_result_fields, hit));
  EXPECT_STREQ(older.key, cubby_result_key(result));
  EXPECT_STREQ(older.tier, "untouched");
  cubby_result_get_fields(nullptr, &older);  // nothing written, no crash
  cubby_result_get_fields(result, nullptr);
  cubby_result_free(result);
}

TEST_F(CApiTest, ColdThenWarmThenOtherHandle) {
  cubby_result* cold = nullptr;
  ASSERT_EQ(compile(cache_, &cold), CUBBY_OK) << cubby_last_error();
  ASSERT_NE(cold, nullptr);
  EXPECT_EQ(cubby_result_hit(cold), 0);
  EXPECT_STREQ(cubby_result_tier(cold), "compiled");
  EXPECT_STREQ(cubby_result_payload_kind(cold), "cubin");
  EXPECT_EQ(std::strlen(cubby_result_key(cold)), 32u);
  EXPECT_GT(cubby_result_compile_ms(cold), 0.0);
  EXPECT_GE(cubby_result_elapsed_ms(cold), 0.0);
  ASSERT_NE(cubby_result_log(cold), nullptr);

  size_t size = 0;
  const void* payload = cubby_result_payload(cold, &size);
  ASSERT_NE(payload, nullptr);
  ASSERT_GT(size, 4u);
  EXPECT_EQ(std::memcmp(payload,
                        "\x7f"
                        "ELF",
                        4),
            0);

  // Names by index: in request order (kNames is not sorted).
  ASSERT_EQ(cubby_result_name_count(cold), kNameCount);
  for (size_t i = 0; i < kNameCount; ++i) {
    EXPECT_STREQ(cubby_result_name_expression(cold, i), kNames[i]);
  }
  EXPECT_STREQ(cubby_result_lowered_name(cold, 2), "counter");
  EXPECT_STREQ(cubby_result_lowered_name(cold, 0), "_ZN2ns5scaleIfLi256EEEvPT_S1_");
  EXPECT_EQ(cubby_result_name_expression(cold, kNameCount), nullptr);
  EXPECT_EQ(cubby_result_lowered_name(cold, kNameCount), nullptr);

  // Names by expression.
  for (size_t i = 0; i < kNameCount; ++i) {
    EXPECT_STREQ(cubby_result_lowered_name_of(cold, cubby_result_name_expression(cold, i)),
                 cubby_result_lowered_name(cold, i));
  }
  EXPECT_STREQ(cubby_result_lowered_name_of(cold, "ns::scale<double, 64>"),
               "_ZN2ns5scaleIdLi64EEEvPT_S1_");
  EXPECT_EQ(cubby_result_lowered_name_of(cold, "ns::scale<int, 1>"), nullptr);
  EXPECT_EQ(cubby_result_lowered_name_of(cold, nullptr), nullptr);

  // Warm, same handle: memory.
  cubby_result* warm = nullptr;
  ASSERT_EQ(compile(cache_, &warm), CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(cubby_result_hit(warm), 1);
  EXPECT_STREQ(cubby_result_tier(warm), "memory");
  EXPECT_STREQ(cubby_result_key(warm), cubby_result_key(cold));
  EXPECT_DOUBLE_EQ(cubby_result_compile_ms(warm), cubby_result_compile_ms(cold));
  for (size_t i = 0; i < kNameCount; ++i) {
    EXPECT_STREQ(cubby_result_lowered_name(warm, i), cubby_result_lowered_name(cold, i));
  }

  // Another handle on the same folder: disk.
  cubby_cache* other = nullptr;
  ASSERT_EQ(cubby_open(dir_.c_str(), &other), CUBBY_OK) << cubby_last_error();
  cubby_result* from_disk = nullptr;
  ASSERT_EQ(compile(other, &from_disk), CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(cubby_result_hit(from_disk), 1);
  EXPECT_STREQ(cubby_result_tier(from_disk), "disk");
  EXPECT_STREQ(cubby_result_key(from_disk), cubby_result_key(cold));
  size_t disk_size = 0;
  const void* disk_payload = cubby_result_payload(from_disk, &disk_size);
  ASSERT_EQ(disk_size, size);
  EXPECT_EQ(std::memcmp(disk_payload, payload, size), 0);
  for (size_t i = 0; i < kNameCount; ++i) {
    EXPECT_STREQ(cubby_result_lowered_name(from_disk, i), cubby_result_lowered_name(cold, i));
  }

  // Stats of each handle.
  const nlohmann::json first = stats(cache_);
  EXPECT_EQ(first["compiles"], 1);
  EXPECT_EQ(first["misses"], 1);
  EXPECT_EQ(first["hits_memory"], 1);
  EXPECT_EQ(first["hits_disk"], 0);
  EXPECT_EQ(first["compile_failures"], 0);
  EXPECT_GT(first["bytes_written"].get<std::uint64_t>(), size);
  EXPECT_GT(first["compile_ms"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(first["compile_ms_saved"].get<double>(), cubby_result_compile_ms(cold));

  const nlohmann::json second = stats(other);
  EXPECT_EQ(second["compiles"], 0);
  EXPECT_EQ(second["hits_disk"], 1);
  EXPECT_EQ(second["hits_memory"], 0);
  EXPECT_GT(second["bytes_read"].get<std::uint64_t>(), size);

  cubby_result_free(from_disk);
  cubby_close(other);
  cubby_result_free(warm);
  cubby_result_free(cold);
}

TEST_F(CApiTest, StatsJsonHasEveryField) {
  const nlohmann::json json = stats(cache_);
  ASSERT_TRUE(json.is_object());
  for (const char* field : {"hits_memory",
                            "hits_disk",
                            "hits_remote",
                            "misses",
                            "compiles",
                            "compile_failures",
                            "pch_created",
                            "pch_reused",
                            "waited_for_others",
                            "corrupt",
                            "failed_writes",
                            "bytes_read",
                            "bytes_written",
                            "compile_ms",
                            "compile_ms_saved",
                            "remote_misses",
                            "remote_errors",
                            "remote_timeouts",
                            "remote_skipped",
                            "remote_rejected",
                            "remote_bytes_read",
                            "remote_bytes_written",
                            "remote_writes",
                            "remote_writes_dropped",
                            "remote_read_ahead",
                            "remote_read_ahead_taken",
                            "remote_ms",
                            "headers_changed",
                            "programs",
                            "uncached_unnamed_include",
                            "uncached_unkeyable_option",
                            "uncached_store_disabled",
                            "uncached_read_only",
                            "uncached_compiled_elsewhere",
                            "waits_given_up"}) {
    ASSERT_TRUE(json.contains(field)) << field;
    EXPECT_TRUE(json[field].is_number()) << field;
    EXPECT_EQ(json[field].get<double>(), 0.0) << field;
  }
  // The first program of each reason counted (none here).
  EXPECT_EQ(json.at("uncached_first"), nlohmann::json::object());
  EXPECT_EQ(json.size(), 36u);
}

TEST_F(CApiTest, KeyEqualsResultKeyWithoutCompiling) {
  char key[33];
  std::memset(key, 'x', sizeof key);
  ASSERT_EQ(cubby_key(cache_, kSource, "scale.cu", kNames, kNameCount, kOptions, kOptionCount,
                      kArch, key),
            CUBBY_OK)
      << cubby_last_error();
  EXPECT_EQ(std::strlen(key), 32u);
  EXPECT_EQ(stats(cache_)["compiles"], 0);
  EXPECT_EQ(stats(cache_)["misses"], 0);
  EXPECT_TRUE(fs::is_empty(dir_));

  cubby_result* result = nullptr;
  ASSERT_EQ(compile(cache_, &result), CUBBY_OK) << cubby_last_error();
  EXPECT_STREQ(key, cubby_result_key(result));
  cubby_result_free(result);

  // A different arch gives a different key.
  char other[33];
  ASSERT_EQ(cubby_key(cache_, kSource, "scale.cu", kNames, kNameCount, kOptions, kOptionCount,
                      "sm_80", other),
            CUBBY_OK);
  EXPECT_STRNE(key, other);
}

// A front end that compiles a program itself and stores it under cubby's key (CuPy's nvcc
// programs) needs a key that covers every header: cubby_storable_key gives one only then.
TEST_F(CApiTest, StorableKeyIsTheKeyOfAProgramTheStoreCoversAndAnErrorOtherwise) {
  char key[33];
  char storable[33];
  ASSERT_EQ(cubby_key(cache_, kSource, "scale.cu", kNames, kNameCount, kOptions, kOptionCount,
                      kArch, key),
            CUBBY_OK);
  ASSERT_EQ(cubby_storable_key(cache_, kSource, "scale.cu", kNames, kNameCount, kOptions,
                               kOptionCount, kArch, storable),
            CUBBY_OK)
      << cubby_last_error();
  EXPECT_STREQ(key, storable);
  const char* cudafe[] = {"-Xcudafe", "--no_rtti"};
  std::memset(storable, 'x', sizeof storable);
  EXPECT_EQ(cubby_storable_key(cache_, kSource, "scale.cu", nullptr, 0, cudafe, 2, kArch, storable),
            CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(storable[0], '\0');
  EXPECT_NE(std::string(cubby_last_error()).find("an option the key cannot cover"),
            std::string::npos)
      << cubby_last_error();
  EXPECT_EQ(cubby_storable_key(cache_, kSource, "scale.cu", nullptr, 0, nullptr, 0, kArch, nullptr),
            CUBBY_ERROR_INVALID_ARGUMENT);
}

TEST_F(CApiTest, CompileErrorGivesLogAndStoresNothing) {
  cubby_result* result = reinterpret_cast<cubby_result*>(&result);  // must be reset to NULL
  EXPECT_EQ(cubby_compile(cache_, kBadSource, "broken.cu", nullptr, 0, nullptr, 0, kArch, &result),
            CUBBY_ERROR_COMPILE_FAILED);
  EXPECT_EQ(result, nullptr);
  const std::string error = cubby_last_error();
  const std::string log = cubby_last_compile_log();
  EXPECT_NE(error.find("broken.cu"), std::string::npos) << error;
  EXPECT_NE(error.find("undeclared_symbol"), std::string::npos) << error;
  EXPECT_NE(log.find("undeclared_symbol"), std::string::npos) << log;
  EXPECT_EQ(log.find("NVRTC could not compile"), std::string::npos) << log;
  EXPECT_NE(error.find(log), std::string::npos);

  EXPECT_EQ(stats(cache_)["compile_failures"], 1);
  EXPECT_EQ(stats(cache_)["compiles"], 0);
  bool has_entry = false;
  if (fs::exists(dir_)) {
    for (const auto& item : fs::recursive_directory_iterator(dir_)) {
      if (item.is_regular_file() && item.path().extension() == ".entry") has_entry = true;
    }
  }
  EXPECT_FALSE(has_entry);

  // A later failure of another kind clears the compile log.
  EXPECT_EQ(cubby_compile(cache_, nullptr, nullptr, nullptr, 0, nullptr, 0, nullptr, &result),
            CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(cubby_last_compile_log(), "");
}

// The compile log is the failure's own field (cubby::Failure::log), not text cut out of the
// message: a program name with a line break changes the message's first lines, never the log.
TEST_F(CApiTest, CompileLogIsTheFailuresLogWhateverTheMessageSays) {
  const std::string name = "two\nlines.cu";
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_compile(cache_, kBadSource, name.c_str(), nullptr, 0, nullptr, 0, kArch, &result),
            CUBBY_ERROR_COMPILE_FAILED);
  const std::string error = cubby_last_error();
  const std::string log = cubby_last_compile_log();
  const std::string head = "NVRTC could not compile " + name + ":\n";
  ASSERT_EQ(error.rfind(head, 0), 0u) << error;
  EXPECT_EQ(log, error.substr(head.size()));  // NVRTC's log, as the message quotes it
  EXPECT_NE(log.find("undeclared_symbol"), std::string::npos) << log;
}

TEST_F(CApiTest, NullArgumentsAreInvalid) {
  cubby_result* result = nullptr;
  char key[33];

  EXPECT_EQ(cubby_open(nullptr, nullptr), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cubby_last_error()).find("out"), std::string::npos);

  EXPECT_EQ(cubby_compile(nullptr, kSource, nullptr, nullptr, 0, nullptr, 0, kArch, &result),
            CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cubby_last_error()).find("cache"), std::string::npos);

  EXPECT_EQ(cubby_compile(cache_, nullptr, nullptr, nullptr, 0, nullptr, 0, kArch, &result),
            CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cubby_last_error()).find("source"), std::string::npos);

  EXPECT_EQ(cubby_compile(cache_, kSource, nullptr, nullptr, 0, nullptr, 0, kArch, nullptr),
            CUBBY_ERROR_INVALID_ARGUMENT);

  EXPECT_EQ(cubby_compile(cache_, kSource, nullptr, nullptr, 2, nullptr, 0, kArch, &result),
            CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cubby_last_error()).find("name_expressions"), std::string::npos);

  EXPECT_EQ(cubby_compile(cache_, kSource, nullptr, nullptr, 0, nullptr, 1, kArch, &result),
            CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cubby_last_error()).find("options"), std::string::npos);

  const char* const with_null[] = {"ns::scale<float, 256>", nullptr};
  EXPECT_EQ(cubby_compile(cache_, kSource, nullptr, with_null, 2, nullptr, 0, kArch, &result),
            CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cubby_last_error()).find("name_expressions[1]"), std::string::npos);
  EXPECT_EQ(result, nullptr);

  EXPECT_EQ(cubby_key(nullptr, kSource, nullptr, nullptr, 0, nullptr, 0, kArch, key),
            CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cubby_key(cache_, nullptr, nullptr, nullptr, 0, nullptr, 0, kArch, key),
            CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(key, "");
  EXPECT_EQ(cubby_key(cache_, kSource, nullptr, nullptr, 0, nullptr, 0, kArch, nullptr),
            CUBBY_ERROR_INVALID_ARGUMENT);

  EXPECT_EQ(cubby_stats_json(nullptr), nullptr);
  EXPECT_NE(std::string(cubby_last_error()).find("cubby_stats_json"), std::string::npos);

  // Accessors and destructors tolerate NULL.
  EXPECT_EQ(cubby_result_key(nullptr), nullptr);
  EXPECT_EQ(cubby_result_hit(nullptr), 0);
  EXPECT_EQ(cubby_result_name_count(nullptr), 0u);
  size_t size = 7;
  EXPECT_EQ(cubby_result_payload(nullptr, &size), nullptr);
  EXPECT_EQ(size, 0u);
  cubby_result_free(nullptr);
  cubby_close(nullptr);

  // Nothing was compiled by any of these.
  EXPECT_EQ(stats(cache_)["compiles"], 0);
}

TEST_F(CApiTest, DefaultsForProgramNameAndArch) {
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_compile(cache_, kSource, nullptr, nullptr, 0, nullptr, 0, nullptr, &result),
            CUBBY_OK)
      << cubby_last_error();
  EXPECT_EQ(cubby_result_name_count(result), 0u);
  EXPECT_STREQ(cubby_result_payload_kind(result), "cubin");
  cubby_result_free(result);
}

TEST(CApi, OpenWithNullDirUsesCubbyDir) {
  const fs::path dir = unique_temp_dir();
  const char* previous = std::getenv("CUBBY_DIR");
  const std::string saved = previous == nullptr ? "" : previous;
  ASSERT_EQ(::setenv("CUBBY_DIR", dir.c_str(), 1), 0);

  cubby_cache* cache = nullptr;
  ASSERT_EQ(cubby_open(nullptr, &cache), CUBBY_OK) << cubby_last_error();
  cubby_result* result = nullptr;
  ASSERT_EQ(cubby_compile(cache, kSource, "scale.cu", nullptr, 0, nullptr, 0, kArch, &result),
            CUBBY_OK)
      << cubby_last_error();
  bool has_entry = false;
  for (const auto& item : fs::recursive_directory_iterator(dir)) {
    if (item.is_regular_file() && item.path().extension() == ".entry") has_entry = true;
  }
  EXPECT_TRUE(has_entry);
  cubby_result_free(result);
  cubby_close(cache);

  // A malformed setting is reported, not thrown.
  ASSERT_EQ(::setenv("CUBBY_MAX_SIZE", "lots", 1), 0);
  cache = nullptr;
  EXPECT_EQ(cubby_open(nullptr, &cache), CUBBY_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cache, nullptr);
  EXPECT_NE(std::string(cubby_last_error()).find("CUBBY_MAX_SIZE"), std::string::npos);
  ::unsetenv("CUBBY_MAX_SIZE");

  if (previous == nullptr) {
    ::unsetenv("CUBBY_DIR");
  } else {
    ::setenv("CUBBY_DIR", saved.c_str(), 1);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace

// Threads call the C API on one handle while another thread closes it: calls in flight finish with
// usable results, cubby_close returns after them, and every call begun after it fails with a
// clear "closed" error. (Under ASan, the old `delete` in cubby_close was a heap-use-after-free.)
TEST(CApi, CloseWaitsForCallsInFlightAndLaterCallsFailClearly) {
  const fs::path dir = unique_temp_dir();
  cubby_cache* cache = nullptr;
  ASSERT_EQ(cubby_open(dir.c_str(), &cache), CUBBY_OK) << cubby_last_error();

  constexpr int kThreads = 4;  // even: compile, odd: key (a tight loop of cheap calls)
  std::atomic<int> first_calls_done{0};
  std::atomic<bool> close_returned{false};
  struct Tally {
    int ok = 0;
    int closed = 0;
    std::vector<std::string> problems;
  };
  std::vector<Tally> tallies(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Tally& tally = tallies[static_cast<size_t>(t)];
      for (int i = 0;; ++i) {
        const bool after_close = close_returned.load();
        int status = CUBBY_OK;
        if (t % 2 == 0) {
          // A new program each time: a real NVRTC compile, in flight when the close comes.
          const std::string source =
              std::string(kSource) + "// " + std::to_string(t) + "." + std::to_string(i) + "\n";
          cubby_result* result = nullptr;
          status = cubby_compile(cache, source.c_str(), "scale.cu", kNames, kNameCount, kOptions,
                                 kOptionCount, kArch, &result);
          if (status == CUBBY_OK) {
            size_t size = 0;
            const void* payload = cubby_result_payload(result, &size);
            if (payload == nullptr || size < 4 ||
                std::memcmp(payload,
                            "\x7f"
                            "ELF",
                            4) != 0 ||
                cubby_result_name_count(result) != kNameCount) {
              tally.problems.push_back("a compile result is not a CUBIN with its names");
            }
            cubby_result_free(result);
          }
        } else {
          char key[33];
          status = cubby_key(cache, kSource, "scale.cu", kNames, kNameCount, kOptions, kOptionCount,
                             kArch, key);
          if (status == CUBBY_OK && std::strlen(key) != 32) tally.problems.push_back("bad key");
        }
        if (i == 0) ++first_calls_done;
        if (status == CUBBY_OK) {
          ++tally.ok;
          if (after_close) tally.problems.push_back("a call begun after cubby_close succeeded");
        } else if (status == CUBBY_ERROR_INVALID_ARGUMENT &&
                   std::strstr(cubby_last_error(), "closed") != nullptr) {
          ++tally.closed;
        } else {
          tally.problems.push_back(cubby_last_error());
        }
        // Stop at the first "closed", and after one call begun after the close in any case.
        if (status != CUBBY_OK || after_close) break;
      }
    });
  }
  while (first_calls_done.load() < kThreads) std::this_thread::yield();
  cubby_close(cache);
  close_returned = true;
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    const Tally& tally = tallies[static_cast<size_t>(t)];
    EXPECT_GE(tally.ok, 1) << "thread " << t;
    EXPECT_EQ(tally.closed, 1) << "thread " << t;
    for (const std::string& problem : tally.problems)
      ADD_FAILURE() << "thread " << t << ": " << problem;
  }

  // Every call on the closed handle fails with a message that says so; closing again is harmless.
  const auto expect_closed = [](const char* function) {
    EXPECT_NE(std::strstr(cubby_last_error(), "closed"), nullptr)
        << function << ": " << cubby_last_error();
    EXPECT_NE(std::strstr(cubby_last_error(), function), nullptr) << cubby_last_error();
  };
  cubby_result* result = nullptr;
  EXPECT_EQ(cubby_compile(cache, kSource, "scale.cu", kNames, kNameCount, kOptions, kOptionCount,
                          kArch, &result),
            CUBBY_ERROR_INVALID_ARGUMENT);
  expect_closed("cubby_compile");
  EXPECT_EQ(result, nullptr);
  char key[33];
  EXPECT_EQ(cubby_key(cache, kSource, nullptr, nullptr, 0, nullptr, 0, kArch, key),
            CUBBY_ERROR_INVALID_ARGUMENT);
  expect_closed("cubby_key");
  EXPECT_EQ(cubby_stats_json(cache), nullptr);
  expect_closed("cubby_stats_json");
  EXPECT_EQ(cubby_store_dir(cache), nullptr);
  expect_closed("cubby_store_dir");
  EXPECT_EQ(cubby_explain_json(cache, kSource, nullptr, nullptr, 0, nullptr, 0, kArch), nullptr);
  expect_closed("cubby_explain_json");
  EXPECT_EQ(cubby_explain_text(cache, kSource, nullptr, nullptr, 0, nullptr, 0, kArch), nullptr);
  expect_closed("cubby_explain_text");
  uint64_t entries = 1;
  uint64_t bytes = 1;
  EXPECT_EQ(cubby_store_usage(cache, &entries, &bytes), CUBBY_ERROR_INVALID_ARGUMENT);
  expect_closed("cubby_store_usage");
  EXPECT_EQ(entries + bytes, 0u);
  EXPECT_EQ(cubby_clear(cache, nullptr), CUBBY_ERROR_INVALID_ARGUMENT);
  expect_closed("cubby_clear");
  EXPECT_EQ(cubby_blob_get(cache, "test", "name", &result), CUBBY_ERROR_INVALID_ARGUMENT);
  expect_closed("cubby_blob_get");
  EXPECT_EQ(cubby_blob_put(cache, "test", "name", "x", 1, 0.0), CUBBY_ERROR_INVALID_ARGUMENT);
  expect_closed("cubby_blob_put");
  cubby_close(cache);

  // A handle opened later is another handle: the closed one stays closed.
  cubby_cache* other = nullptr;
  ASSERT_EQ(cubby_open(dir.c_str(), &other), CUBBY_OK) << cubby_last_error();
  EXPECT_NE(other, cache);
  EXPECT_EQ(cubby_stats_json(cache), nullptr);
  EXPECT_NE(cubby_stats_json(other), nullptr) << cubby_last_error();
  cubby_close(other);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// JSON answers stay valid (UTF-8) whatever bytes the request holds, and the string of each
// thread is its own.
TEST_F(CApiTest, ExplainJsonIsValidForAnyBytesAndPerThread) {
  const char* const options[] = {"-DNAME=\xff\xfe"};
  const char* text = cubby_explain_json(cache_, kSource, "\xff.cu", nullptr, 0, options, 1, kArch);
  ASSERT_NE(text, nullptr) << cubby_last_error();
  const std::string mine = text;
  const nlohmann::json fields = nlohmann::json::parse(mine);
  ASSERT_TRUE(fields.is_array());
  EXPECT_GT(fields.size(), 3u);
  std::thread([&] {
    ASSERT_NE(cubby_explain_json(cache_, "other", nullptr, nullptr, 0, nullptr, 0, kArch), nullptr);
  }).join();
  EXPECT_EQ(std::string(text), mine);  // another thread's call did not overwrite this thread's
}

// The text dump is the one layout (a title, then label, short hash, value), field for field the
// JSON answer's, a toolkit header included.
TEST_F(CApiTest, ExplainTextIsTheOneKeyDumpOfTheJsonFields) {
  const std::string source = std::string("#include <cuda/std/cstdint>\n") + kSource;
  const char* json_text =
      cubby_explain_json(cache_, source.c_str(), nullptr, kNames, kNameCount, nullptr, 0, kArch);
  ASSERT_NE(json_text, nullptr) << cubby_last_error();
  const nlohmann::json fields = nlohmann::json::parse(json_text);
  const char* text =
      cubby_explain_text(cache_, source.c_str(), nullptr, kNames, kNameCount, nullptr, 0, kArch);
  ASSERT_NE(text, nullptr) << cubby_last_error();
  const std::string dump = text;
  EXPECT_EQ(dump.rfind("key fields (label, hash, value):\n", 0), 0u) << dump;
  std::size_t at = 0;
  for (const auto& field : fields) {
    const std::string label = field["label"];
    const std::string short_hash = field["hash"].get<std::string>().substr(0, 12);
    at = dump.find("\n  " + label + " ", at);
    ASSERT_NE(at, std::string::npos) << label << " missing or out of order in\n" << dump;
    const std::size_t end = dump.find('\n', at + 1);
    const std::string line = dump.substr(at + 1, end - at - 1);
    EXPECT_NE(line.find("  " + short_hash + "  " + field["summary"].get<std::string>()),
              std::string::npos)
        << line;
  }
  EXPECT_NE(dump.find("header[cuda/std/cstdint]"), std::string::npos) << dump;
  EXPECT_NE(dump.find("toolkit (covered by the NVRTC identity)"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("unresolved"), std::string::npos) << dump;
}

// Issue 36 item 6: a store path under a regular file (CUBBY_DIR=afile/sub) opens, compiles with
// nothing cached, and the warning names the file, with no advice about a cubby.conf.
TEST_F(CApiTest, AStorePathUnderARegularFileOpensAndNamesTheFile) {
  const fs::path file = dir_ / "afile";
  {
    std::FILE* out = std::fopen(file.c_str(), "w");
    std::fputs("mine\n", out);
    std::fclose(out);
  }
  const fs::path under = file / "sub";
  ::testing::internal::CaptureStderr();
  cubby_cache* cache = nullptr;
  const int opened = cubby_open(under.c_str(), &cache);
  cubby_result* result = nullptr;
  const int compiled = opened == CUBBY_OK ? compile(cache, &result) : opened;
  const std::string said = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(opened, CUBBY_OK) << cubby_last_error();
  EXPECT_EQ(compiled, CUBBY_OK) << cubby_last_error();
  if (result != nullptr) {
    EXPECT_STREQ(cubby_result_tier(result), "compiled");
  }
  cubby_result_free(result);
  cubby_close(cache);
  EXPECT_NE(said.find("cannot be made: " + file.string() + " is a file, not a folder"),
            std::string::npos)
      << said;
  EXPECT_EQ(said.find("cubby.conf"), std::string::npos) << said;
}
