#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "cubby/config.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using testing::ScopedEnv;

TEST(ParseSize, TakesCcachesUnitsDecimalAndBinary) {
  EXPECT_EQ(*parse_size("0"), 0u);
  EXPECT_EQ(*parse_size("123"), 123u);
  EXPECT_EQ(*parse_size("10k"), 10'000u);
  EXPECT_EQ(*parse_size("10K"), 10'000u);
  EXPECT_EQ(*parse_size("500M"), 500'000'000u);
  EXPECT_EQ(*parse_size("5G"), 5'000'000'000u);
  EXPECT_EQ(*parse_size("5gb"), 5'000'000'000u);
  EXPECT_EQ(*parse_size("1T"), 1'000'000'000'000u);
  EXPECT_EQ(*parse_size("10Ki"), 10u << 10);
  EXPECT_EQ(*parse_size("64Mi"), 64ull << 20);
  EXPECT_EQ(*parse_size("5Gi"), 5ull << 30);
  EXPECT_EQ(*parse_size("5GiB"), 5ull << 30);
  EXPECT_EQ(*parse_size("1Ti"), 1ull << 40);
  EXPECT_EQ(*parse_size(" 2 M "), 2'000'000u);
}

TEST(ParseSize, TakesDecimalsRoundedDownToBytes) {
  EXPECT_EQ(*parse_size("1.5G"), 1'500'000'000u);
  EXPECT_EQ(*parse_size("1.5Gi"), 3ull << 29);
  EXPECT_EQ(*parse_size(".5k"), 500u);
  EXPECT_EQ(*parse_size("0.001k"), 1u);
  EXPECT_EQ(*parse_size("1.0000001k"), 1000u);  // digits past the sixth are dropped
}

TEST(ParseSize, RejectsGarbageAndOverflow) {
  for (const char* bad :
       {"", "G", "-1", "1..5G", ".", "abc", "5X", "5Gx", "5iG", "1.5", "99999999999999999999",
        "99999999999T", "18446744073709551616", "16777216Ti"}) {
    auto parsed = parse_size(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().code, Errc::invalid_argument) << bad;
  }
  EXPECT_EQ(*parse_size("18446744073709551615"), std::numeric_limits<std::uint64_t>::max());
}

// Issue 23 item 9: a size past its setting's cap is an error naming the cap, never a wrap (a
// remote_max_entry of 2^64 - 1 made every remote value rejected and re-uploaded).
TEST(Config, EverySizeSettingIsCappedNeverWrapped) {
  ScopedEnv dir("CUBBY_DIR", "/tmp/cubby-config-test");
  for (const auto& [name, huge] :
       {std::pair{"CUBBY_REMOTE_MAX_ENTRY", "18446744073709551615"},
        std::pair{"CUBBY_REMOTE_MAX_ENTRY", "2Gi"}, std::pair{"CUBBY_MAX_SIZE", "2Ei"},
        std::pair{"CUBBY_MAX_SIZE", "18446744073709551615"},
        std::pair{"CUBBY_MEMORY_ENTRIES", "999999999999"}}) {
    ScopedEnv value(name, huge);
    auto config = Config::from_env();
    ASSERT_FALSE(config) << name << "=" << huge;
    EXPECT_EQ(config.error().code, Errc::invalid_argument);
    EXPECT_NE(config.error().message.find(name), std::string::npos) << config.error().message;
    EXPECT_NE(config.error().message.find("at most"), std::string::npos) << config.error().message;
  }
  ScopedEnv entry("CUBBY_REMOTE_MAX_ENTRY", "1Gi");  // the cap itself is fine
  ScopedEnv size("CUBBY_MAX_SIZE", "1Ei");
  auto config = Config::from_env();
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->remote_max_entry, 1ull << 30);
  EXPECT_EQ(config->max_size, kMaxStoreSize);
}

TEST(Config, ZeroMaxSizeIsUnlimitedAsInCcache) {
  ScopedEnv dir("CUBBY_DIR", "/tmp/cubby-config-test");
  ScopedEnv size("CUBBY_MAX_SIZE", "0");
  ScopedEnv entry("CUBBY_REMOTE_MAX_ENTRY", "0");
  auto config = Config::from_env();
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->max_size, kUnlimitedMaxSize);  // nothing is ever evicted for size
  EXPECT_LE(config->max_size, static_cast<std::uint64_t>(INT64_MAX));  // the store counts in int64
  EXPECT_EQ(config->remote_max_entry, 1ull << 30);  // no bound of its own: the largest entry read
}

// Issue 27 item 4: a store path that is a regular file is said to be one, and is no error (a
// store that cannot be written: every compile still works, nothing is cached).
TEST(Config, AStoreThatIsAFileIsNoErrorAndIsSaidOnce) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "cubby-dir-is-a-file";
  { std::ofstream(file) << "not a folder\n"; }
  ScopedEnv dir("CUBBY_DIR", file.string());
  ::testing::internal::CaptureStderr();
  auto config = Config::from_env();
  auto again = Config::from_env();
  const std::string said = ::testing::internal::GetCapturedStderr();
  std::filesystem::remove(file);
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_NE(said.find("is a file, not a folder"), std::string::npos) << said;
  EXPECT_NE(said.find("CUBBY_DIR"), std::string::npos) << said;
  EXPECT_EQ(said.find("is a file", said.find("is a file") + 1), std::string::npos) << said;  // once
}

TEST(ParseBool, KnownSpellings) {
  for (const char* yes : {"1", "true", "YES", "On"}) EXPECT_TRUE(*parse_bool(yes)) << yes;
  for (const char* no : {"0", "false", "no", "OFF"}) EXPECT_FALSE(*parse_bool(no)) << no;
  EXPECT_FALSE(parse_bool("maybe").ok());
}

TEST(Config, RemoteTtlOverWhatRedisAcceptsIsRefusedWithWhatToDo) {
  ScopedEnv dir("CUBBY_DIR", "/tmp/cubby-config-test");
  {
    ScopedEnv ttl("CUBBY_REMOTE_TTL", "104166666666d");  // 8999999999942400 s: Redis takes it
    auto config = Config::from_env();
    ASSERT_TRUE(config) << config.error().message;
    EXPECT_EQ(config->remote_ttl_s, 104166666666ull * 86400);
    EXPECT_LE(config->remote_ttl_s, kMaxRemoteTtlS);
  }
  for (const char* huge : {"104166666667d", "999999999999d"}) {
    ScopedEnv ttl("CUBBY_REMOTE_TTL", huge);  // Redis would refuse every write
    auto config = Config::from_env();
    ASSERT_FALSE(config) << huge;
    EXPECT_EQ(config.error().code, Errc::invalid_argument);
    EXPECT_NE(config.error().message.find("CUBBY_REMOTE_TTL"), std::string::npos);
    EXPECT_NE(config.error().message.find("use 0"), std::string::npos) << config.error().message;
  }
}

TEST(Config, StoreDirPrecedence) {
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv dir("CUBBY_DIR", std::nullopt);
    ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    EXPECT_EQ(default_store_dir(), "/home/someone/.cache/cubby");
  }
  {
    ScopedEnv dir("CUBBY_DIR", std::nullopt);
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(default_store_dir(), "/xdg/cubby");
  }
  {
    ScopedEnv dir("CUBBY_DIR", "/store");
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(default_store_dir(), "/store");
    EXPECT_EQ(Config::from_env()->dir, "/store");
  }
}

TEST(Config, ReadsEveryVariable) {
  ScopedEnv size("CUBBY_MAX_SIZE", "2G");
  ScopedEnv remote("CUBBY_REMOTE", "redis://127.0.0.1:6379/0");
  ScopedEnv secret("CUBBY_REMOTE_SECRET", "s3cret");
  ScopedEnv token("CUBBY_REMOTE_TOKEN", "t0ken");
  ScopedEnv token_file("CUBBY_REMOTE_TOKEN_FILE", "/run/secrets/cubby-token");
  ScopedEnv ca_file("CUBBY_REMOTE_CA_FILE", "/etc/ssl/team-ca.pem");
  ScopedEnv read_only("CUBBY_READ_ONLY", "1");
  ScopedEnv disable("CUBBY_DISABLE", "yes");
  ScopedEnv arch("CUBBY_ARCH", "sm_90a");
  ScopedEnv entries("CUBBY_MEMORY_ENTRIES", "7");
  auto config = Config::from_env();
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->max_size, 2'000'000'000u);
  EXPECT_EQ(config->remote_url, "redis://127.0.0.1:6379/0");
  EXPECT_EQ(config->remote_secret, "s3cret");
  EXPECT_EQ(config->remote_token, "t0ken");
  EXPECT_EQ(config->remote_token_file, "/run/secrets/cubby-token");
  EXPECT_EQ(config->remote_ca_file, "/etc/ssl/team-ca.pem");
  EXPECT_TRUE(config->read_only);
  EXPECT_TRUE(config->disabled);
  EXPECT_EQ(config->default_arch, "sm_90a");
  EXPECT_EQ(config->memory_entries, 7u);
}

TEST(Config, ReadsTheColdPathVariables) {
  {
    ScopedEnv suite("CUBBY_SUITE", "my suite");
    ScopedEnv jobs("CUBBY_JOBS", "12");
    ScopedEnv prefetch("CUBBY_PREFETCH", "off");
    ScopedEnv pch("CUBBY_PCH", "Eager");
    auto config = Config::from_env();
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->suite, "my suite");
    EXPECT_EQ(config->jobs, 12u);
    EXPECT_FALSE(config->prefetch);
    EXPECT_TRUE(config->pch);
    EXPECT_TRUE(config->pch_eager);
  }
  for (const char* unset : {"CUBBY_SUITE", "CUBBY_JOBS", "CUBBY_PREFETCH", "CUBBY_PCH"}) {
    ::unsetenv(unset);
  }
  auto defaults = Config::from_env();
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->suite, "");
  EXPECT_EQ(defaults->jobs, 0u);
  EXPECT_TRUE(defaults->prefetch);
  EXPECT_TRUE(defaults->pch);
  EXPECT_FALSE(defaults->pch_eager);
  for (const auto& [name, value] :
       {std::pair{"CUBBY_JOBS", "2K"}, std::pair{"CUBBY_JOBS", "-1"},
        std::pair{"CUBBY_JOBS", "99999"}, std::pair{"CUBBY_PCH", "sometimes"}}) {
    ScopedEnv bad(name, value);
    auto config = Config::from_env();
    ASSERT_FALSE(config.ok()) << name << "=" << value;
    EXPECT_NE(config.error().message.find(name), std::string::npos);
  }
}

TEST(Config, DefaultsWhenUnset) {
  for (const char* name : {"CUBBY_MAX_SIZE", "CUBBY_READ_ONLY", "CUBBY_DISABLE", "CUBBY_ARCH"}) {
    ::unsetenv(name);
  }
  auto config = Config::from_env();
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->max_size, 5ull << 30);
  EXPECT_FALSE(config->read_only);
  EXPECT_FALSE(config->disabled);
  EXPECT_TRUE(config->default_arch.empty());
}

TEST(Config, BaseDirIsAbsoluteAndNormalized) {
  {
    ScopedEnv base("CUBBY_BASE_DIR", "/builds/runner-7/project/./src/../");
    auto config = Config::from_env();
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->base_dir, std::filesystem::path("/builds/runner-7/project/"));
  }
  ScopedEnv relative("CUBBY_BASE_DIR", "project");
  auto config = Config::from_env();
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message.find("CUBBY_BASE_DIR"), std::string::npos);
  EXPECT_NE(config.error().message.find("absolute"), std::string::npos);
}

TEST(Config, MalformedVariableNamesItself) {
  ScopedEnv size("CUBBY_MAX_SIZE", "lots");
  auto config = Config::from_env();
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().code, Errc::invalid_argument);
  EXPECT_NE(config.error().message.find("CUBBY_MAX_SIZE"), std::string::npos);
  EXPECT_NE(config.error().message.find("lots"), std::string::npos);
}

TEST(Config, MalformedFlagNamesItself) {
  ScopedEnv read_only("CUBBY_READ_ONLY", "perhaps");
  auto config = Config::from_env();
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message.find("CUBBY_READ_ONLY"), std::string::npos);
}

// CUBBY_MEMORY_ENTRIES is a count: a size such as "500M" is refused, and the message says so.
TEST(Config, MemoryEntriesIsACountNotASize) {
  for (const char* value : {"500M", "lots", "-1", "1.5"}) {
    ScopedEnv entries("CUBBY_MEMORY_ENTRIES", value);
    auto config = Config::from_env();
    ASSERT_FALSE(config.ok()) << value;
    const std::string& message = config.error().message;
    EXPECT_NE(message.find("CUBBY_MEMORY_ENTRIES"), std::string::npos) << message;
    EXPECT_NE(message.find("number of entries"), std::string::npos) << message;
    EXPECT_EQ(message.find("500M, 5G"), std::string::npos) << message;
  }
  ScopedEnv entries("CUBBY_MEMORY_ENTRIES", "2048");
  auto config = Config::from_env();
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->memory_entries, 2048u);
}

// A bound below 1 MiB evicts nearly everything written: said once per process, not silently.
TEST(Config, MaxSizeBelowOneMebibyteWarnsOnce) {
  ::testing::internal::CaptureStderr();
  {
    ScopedEnv size("CUBBY_MAX_SIZE", "1B");  // "1" alone would be 1 GiB
    ASSERT_TRUE(Config::from_env().ok());
    ASSERT_TRUE(Config::from_env().ok());
  }
  {
    ScopedEnv size("CUBBY_MAX_SIZE", "1M");  // the floor itself is fine
    ASSERT_TRUE(Config::from_env().ok());
  }
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  const std::string said = "CUBBY_MAX_SIZE=\"1B\" is below 1 MiB";
  const std::size_t first = warnings.find(said);
  ASSERT_NE(first, std::string::npos) << warnings;
  EXPECT_EQ(warnings.find(said, first + 1), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find("1M"), std::string::npos) << warnings;
}

}  // namespace
}  // namespace cubby
