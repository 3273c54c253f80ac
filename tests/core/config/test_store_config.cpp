// Tests for core/src/config/store_config.cpp (the store's cubby.conf) and Config::load's use of it:
// a variable over the file over the default, errors that name the file's line, writes that keep
// every other line.
#include <gtest/gtest.h>

#include "config/store_config.hpp"
#include "cubby/config.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using testing::read_text;
using testing::ScopedEnv;
using testing::TempDir;
using testing::write_text;

// The store settings' variables unset for the scope (the developer's own must not leak in).
struct CleanStoreEnv {
  std::vector<std::unique_ptr<ScopedEnv>> unset;
  CleanStoreEnv() {
    for (const StoreSettingInfo& setting : kStoreSettings) {
      unset.push_back(std::make_unique<ScopedEnv>(std::string(setting.env), std::nullopt));
    }
  }
};

// Issue 36: as in ccache, a store bound without a unit is GiB (in the file, the variable and
// `cubby gc --max-size`), not bytes; with B it is bytes, and 0 still means unlimited.
TEST(StoreConfig, AMaxSizeWithoutAUnitIsGibAsInCcache) {
  CleanStoreEnv clean;
  TempDir store("store-config-gib");
  write_text(store / "cubby.conf", "max_size = 5\n");
  auto config = Config::load(store.path());
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->max_size, 5ull << 30);
  ScopedEnv size("CUBBY_MAX_SIZE", " 1.5 ");
  config = Config::load(store.path());
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->max_size, 3ull << 29);
  EXPECT_EQ(*parse_max_size("2"), 2ull << 30);
  EXPECT_EQ(*parse_max_size("2000000B"), 2'000'000u);
  EXPECT_EQ(*parse_max_size("2M"), 2'000'000u);
  EXPECT_EQ(*parse_max_size("0"), kUnlimitedMaxSize);
  EXPECT_FALSE(parse_max_size("2000000000").ok());  // 2e9 GiB: past the 1 EiB cap, refused
}

TEST(StoreConfig, FileValuesApplyAndVariablesWinOverThem) {
  CleanStoreEnv clean;
  TempDir store("store-config");
  write_text(store / "cubby.conf",
             "# the team's store\n\n  max_size = 100M  \nremote_mode=read\nfuture_key = 1\n");
  auto config = Config::load(store.path());
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->dir, store.path());
  EXPECT_EQ(config->max_size, 100'000'000u);
  EXPECT_TRUE(config->remote_read_only);
  EXPECT_FALSE(config->read_only);  // not in the file: the default

  ScopedEnv size("CUBBY_MAX_SIZE", "2G");
  config = Config::load(store.path());
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->max_size, 2'000'000'000u);

  auto settings = effective_settings(store.path());
  ASSERT_TRUE(settings.ok()) << settings.error().message;
  const auto& max_size = (*settings)[0];
  EXPECT_EQ(max_size.info->key, "max_size");
  EXPECT_EQ(max_size.origin, SettingOrigin::environment);
  EXPECT_EQ(max_size.value, "2G");
  EXPECT_EQ(origin_text(*max_size.info, max_size.origin, store.path()), "CUBBY_MAX_SIZE");
  const auto& mode = (*settings)[3];
  EXPECT_EQ(mode.info->key, "remote_mode");
  EXPECT_EQ(mode.origin, SettingOrigin::store_file);
  EXPECT_EQ(mode.line, 4u);
  EXPECT_EQ(origin_text(*mode.info, mode.origin, store.path()), (store / "cubby.conf").string());
  EXPECT_EQ((*settings)[1].origin, SettingOrigin::default_value);
  EXPECT_EQ((*settings)[1].value, "false");
}

TEST(StoreConfig, TlsFilesComeFromTheFileOrTheirVariables) {
  CleanStoreEnv clean;
  TempDir store("store-config");
  write_text(store / "cubby.conf",
             "remote = rediss://cache:6380\nremote_ca_file = /etc/team/ca.pem\n"
             "remote_cert_file = /etc/team/client.pem\n");
  ScopedEnv key("CUBBY_REMOTE_KEY_FILE", "/run/secrets/client.key");
  auto config = Config::load(store.path());
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->remote_url, "rediss://cache:6380");
  EXPECT_EQ(config->remote_ca_file, "/etc/team/ca.pem");
  EXPECT_EQ(config->remote_cert_file, "/etc/team/client.pem");
  EXPECT_EQ(config->remote_key_file, "/run/secrets/client.key");
}

TEST(StoreConfig, FromEnvReadsTheDefaultStoresFile) {
  CleanStoreEnv clean;
  TempDir store("store-config");
  write_text(store / "cubby.conf", "max_size = 3M\n");
  ScopedEnv dir("CUBBY_DIR", store.path().string());
  auto config = Config::from_env();
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->max_size, 3'000'000u);
}

// One bad line of a store's cubby.conf made every process on the store fail (exit 2): it is now
// warned about once per process, naming the file and line, and the key keeps its default.
TEST(StoreConfig, ABadValueOrLineIsWarnedAboutOnceAndTheKeyKeepsItsDefault) {
  CleanStoreEnv clean;
  TempDir store("store-config");
  write_text(store / "cubby.conf", "read_only = 1\nmax_size = lots\n");
  ::testing::internal::CaptureStderr();
  auto config = Config::load(store.path());
  std::string warned = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_TRUE(config->read_only);                  // the good line applies
  EXPECT_EQ(config->max_size, Config{}.max_size);  // the bad one keeps the default
  EXPECT_NE(warned.find((store / "cubby.conf").string() + ":2"), std::string::npos) << warned;
  EXPECT_NE(warned.find("lots"), std::string::npos) << warned;
  EXPECT_NE(warned.find("cubby config max_size"), std::string::npos) << warned;
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(Config::load(store.path()).ok());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // once per process

  write_text(store / "cubby.conf", "max_size 5G\nread_only = 1\n");
  ::testing::internal::CaptureStderr();
  config = Config::load(store.path());
  warned = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_TRUE(config->read_only);
  EXPECT_NE(warned.find("cubby.conf:1"), std::string::npos) << warned;
  EXPECT_NE(warned.find("key = value"), std::string::npos) << warned;
  // `cubby config`, which shows the file, still fails on the line.
  auto settings = effective_settings(store.path());
  ASSERT_FALSE(settings.ok());
  EXPECT_NE(settings.error().message.find(":1"), std::string::npos) << settings.error().message;
}

// A NUL in a value was dropped from the message, and everything after it: it shows escaped.
TEST(StoreConfig, ANulOrControlByteInAValueShowsEscaped) {
  CleanStoreEnv clean;
  TempDir store("store-config");
  write_text(store / "cubby.conf", std::string("max_size = 5\0G\x1b[2J!\n", 20));
  ::testing::internal::CaptureStderr();
  auto config = Config::load(store.path());
  const std::string warned = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_NE(warned.find("\"5\\0G\\x1b[2J!\" is not valid"), std::string::npos) << warned;
  EXPECT_EQ(escaped(std::string("a\\b\0c\n\xff", 7)), "a\\\\b\\0c\\x0a\\xff");
}

TEST(StoreConfig, AMissingStoreOrFileMeansDefaults) {
  CleanStoreEnv clean;
  TempDir root("store-config");
  auto config = Config::load(root / "not-yet");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->max_size, Config{}.max_size);
}

TEST(StoreConfig, WritesReplaceTheKeyAndKeepEveryOtherLine) {
  CleanStoreEnv clean;
  TempDir root("store-config");
  const auto store = root / "store";  // created by the write
  ASSERT_TRUE(write_store_setting(store, "max_size", "1G").ok());
  EXPECT_EQ(read_text(store / "cubby.conf"), "max_size = 1G\n");
  write_text(store / "cubby.conf", "# keep me\nmax_size = 1G\nremote = redis://h:1\nmax_size=2G\n");
  ASSERT_TRUE(write_store_setting(store, "max_size", "500M").ok());
  EXPECT_EQ(read_text(store / "cubby.conf"), "# keep me\nremote = redis://h:1\nmax_size = 500M\n");
  ASSERT_TRUE(write_store_setting(store, "remote", std::nullopt).ok());
  EXPECT_EQ(read_text(store / "cubby.conf"), "# keep me\nmax_size = 500M\n");
  EXPECT_EQ(Config::load(store)->max_size, 500'000'000u);

  auto unknown = write_store_setting(store, "max_sise", "1G");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("max_size"), std::string::npos);  // lists the keys
  auto invalid = write_store_setting(store, "remote_ttl", "forever");
  ASSERT_FALSE(invalid.ok());
  EXPECT_NE(invalid.error().message.find("forever"), std::string::npos);
  EXPECT_EQ(read_text(store / "cubby.conf"), "# keep me\nmax_size = 500M\n");  // untouched
}

// Every setting of the table parses its own default, and has a variable and a description.
TEST(StoreConfig, EveryDefaultParses) {
  for (const StoreSettingInfo& setting : kStoreSettings) {
    EXPECT_TRUE(setting.env.starts_with("CUBBY_")) << setting.key;
    EXPECT_FALSE(setting.what.empty()) << setting.key;
    Config config;
    EXPECT_TRUE(setting.apply(config, setting.default_value).ok()) << setting.key;
    EXPECT_EQ(find_store_setting(setting.key), &setting);
  }
  EXPECT_EQ(find_store_setting("nope"), nullptr);
}

}  // namespace
}  // namespace cubby
