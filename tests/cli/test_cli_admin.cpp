// The store-admin surface of the `cubby` tool at ccache's level (issue 14, part 4): global options
// before the command, unknown commands, key prefixes, `ls`'s header and names, the store's config
// file, `gc --older-than`, `clear --namespace`, `stats --zero`'s "since", gzip'd export and import,
// the generated man page and bash completion, and the one key of the CLI and the library.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli_process.hpp"
#include "cubby/cache.hpp"
#include "cubby/key.hpp"
#include "http_fake.hpp"
#include "storage/local/disk.hpp"
#include "test_support.hpp"
#include "util/file_trust.hpp"

namespace {

namespace fs = std::filesystem;
using cubby::testing::cli_json;
using cubby::testing::read_text;
using cubby::testing::TempDir;
using cubby::testing::write_text;
using nlohmann::json;
using Outcome = cubby::testing::CliOutcome;

constexpr const char* kKernel = cubby::testing::kTemplateKernel;
using cubby::testing::stats_row;

class AdminCliTest : public ::testing::Test {
 protected:
  TempDir root_{"cli-admin"};
  fs::path store_ = root_ / "store";
  fs::path kernel_ = root_ / "kernel.cu";

  void SetUp() override { write_text(kernel_, kKernel); }

  // `cubby args...` with CUBBY_DIR=store_ and no other CUBBY_* variable but `env`.
  Outcome cubby(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    const cubby::testing::CliOutputFiles files{root_ / "out.txt", root_ / "err.txt"};
    return cubby::testing::finish_cli(cubby::testing::start_cli(args, store_, files, env, "CUBBY_"),
                                      files);
  }
  json parse(const Outcome& run) {
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return cli_json(run);
  }
  // A library handle on store_ (the test's own settings: defaults).
  std::unique_ptr<cubby::Cache> cache() {
    cubby::Config config;
    config.dir = store_;
    return std::make_unique<cubby::Cache>(config);
  }
  // Stores blob `name` of `ns` through the library (no compile needed); returns its key.
  std::string put_blob(const std::string& ns, const std::string& name) {
    return cache()->store_blob(ns, name, "payload of " + name, 1.0).key.hex();
  }
};

TEST_F(AdminCliTest, GlobalOptionsGoBeforeOrAfterTheCommand) {
  put_blob("cupy", "a");
  const fs::path other = root_ / "other";
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"--dir", other.string(), "--json", "ls"},
                                             {"--json", "ls", "--dir", other.string()},
                                             {"ls", "--json", "--dir", other.string()}}) {
    const Outcome run = cubby(args);
    EXPECT_EQ(parse(run), json::array()) << args[0];  // the other (empty) store, as JSON
  }
  EXPECT_EQ(parse(cubby({"--json", "ls"})).size(), 1u);
}

TEST_F(AdminCliTest, AnUnknownOrMissingCommandIsAUsageErrorListingTheCommands) {
  const Outcome typo = cubby({"--dir", store_.string(), "stat"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("unknown command 'stat'"), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("did you mean `cubby stats`"), std::string::npos) << typo.err;
  for (const char* command : {"compile", "config", "gc", "export", "warm"}) {
    EXPECT_NE(typo.err.find(command), std::string::npos) << command << ": " << typo.err;
  }
  const Outcome none = cubby({"--json"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no command given"), std::string::npos) << none.err;
  EXPECT_EQ(cubby({"--help"}).exit_code, 0);
}

TEST_F(AdminCliTest, ShowTakesAUniquePrefix) {
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) keys.push_back(put_blob("cupy", "k" + std::to_string(i)));
  std::sort(keys.begin(), keys.end());
  const std::string& key = keys.front();
  // The shortest prefix of `key` no other key shares, at least 4 digits.
  std::size_t unique = 4;
  while (keys[1].starts_with(key.substr(0, unique))) ++unique;
  const Outcome shown = cubby({"show", key.substr(0, unique), "--json"});
  EXPECT_EQ(parse(shown)["key"], key);
  EXPECT_EQ(parse(cubby({"show", "--json", key.substr(0, unique)}))["key"], key);
  const std::string upper = [&] {
    std::string text = key;
    for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return text;
  }();
  EXPECT_EQ(parse(cubby({"show", "--json", upper.substr(0, unique)}))["key"], key);

  const Outcome short_prefix = cubby({"show", key.substr(0, 3)});
  EXPECT_EQ(short_prefix.exit_code, 2);
  EXPECT_NE(short_prefix.err.find("too short"), std::string::npos) << short_prefix.err;
  const Outcome not_hex = cubby({"show", "xyz12"});
  EXPECT_EQ(not_hex.exit_code, 2);
  EXPECT_NE(not_hex.err.find("not a key"), std::string::npos) << not_hex.err;
  std::string absent;
  for (int prefix = 0; absent.empty(); ++prefix) {
    char text[16];
    std::snprintf(text, sizeof text, "%04x", static_cast<unsigned>(prefix & 0xffff));
    if (std::none_of(keys.begin(), keys.end(), [&](const auto& k) { return k.starts_with(text); }))
      absent = text;
  }
  const Outcome missing = cubby({"show", absent});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no entry's key starts with " + absent), std::string::npos);
}

TEST_F(AdminCliTest, AmbiguousPrefixListsTheCandidates) {
  // Two entry files whose keys share their first 6 digits (resolving reads no entry's content).
  cubby::DiskTier disk(store_);
  const std::string first = "abcdef" + std::string(26, '0');
  const std::string second = "abcdef" + std::string(26, '1');
  for (const std::string& hex : {first, second}) {
    ASSERT_TRUE(disk.put(*cubby::Key::parse(hex), "not decoded").ok());
  }
  const Outcome ambiguous = cubby({"show", "ABCDEF"});
  EXPECT_EQ(ambiguous.exit_code, 2);
  EXPECT_NE(ambiguous.err.find("ambiguous"), std::string::npos) << ambiguous.err;
  EXPECT_NE(ambiguous.err.find(first), std::string::npos) << ambiguous.err;
  EXPECT_NE(ambiguous.err.find(second), std::string::npos) << ambiguous.err;
  const Outcome longer = cubby({"show", "abcdef1"});  // unique now: found (and refused as corrupt)
  EXPECT_EQ(longer.exit_code, 1);
  EXPECT_NE(longer.err.find(second), std::string::npos) << longer.err;
}

TEST_F(AdminCliTest, LsPrintsAHeaderAndTheNames) {
  const Outcome compiled = cubby({"compile", kernel_.string(), "--arch", "sm_90", "--name-expr",
                                  "ns::k<float, 1>", "--name-expr", "ns::k<double, 2>"});
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  put_blob("cupy", "kernel_blob");
  const Outcome listed = cubby({"ls"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(listed.out.rfind("KEY ", 0), 0u) << listed.out;
  for (const char* column : {"SIZE", "LAST USED", "KIND", "NAMESPACE", "NAMES"}) {
    EXPECT_NE(listed.out.find(column), std::string::npos) << column;
  }
  EXPECT_NE(listed.out.find("ns::k<double, 2>, ns::k<float, 1>"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("programs"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("cupy"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("kernel_blob"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("2 names"), std::string::npos) << listed.out;

  const Outcome verbose = cubby({"ls", "-v"});
  EXPECT_NE(verbose.out.find("    ns::k<float, 1> -> _ZN2ns1kIfLi1EEEvPT_"), std::string::npos)
      << verbose.out;
  const json rows = parse(cubby({"ls", "--json", "-v"}));
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    if (row["namespace"] == "programs") {
      EXPECT_EQ(row["name_expressions"], json({"ns::k<double, 2>", "ns::k<float, 1>"}));
      EXPECT_EQ(row["lowered_names"]["ns::k<float, 1>"], "_ZN2ns1kIfLi1EEEvPT_");
    } else {
      EXPECT_EQ(row["namespace"], "cupy");
      EXPECT_EQ(row["name"], "kernel_blob");
    }
  }
}

// The store's config file: set, shown by stats with its origin, honoured by the library, beaten
// by the variable; a bad value is refused and leaves the file alone.
TEST_F(AdminCliTest, ConfigPersistsTheStoresSettingsForTheCliAndTheLibrary) {
  const Outcome set = cubby({"config", "max_size", "2M"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_TRUE(set.out.starts_with("2M (2.0 MB;")) << set.out;  // what it means, in its units
  EXPECT_NE(read_text(store_ / "cubby.conf").find("max_size = 2M"), std::string::npos);

  const json stats = parse(cubby({"stats", "--json"}));
  EXPECT_EQ(stats["max_size"], 2'000'000u);
  EXPECT_EQ(stats["max_size_origin"], (store_ / "cubby.conf").string());
  const Outcome text = cubby({"stats"});
  EXPECT_NE(text.out.find("of 2.0 MB"), std::string::npos) << text.out;
  EXPECT_TRUE(
      stats_row(text.out, "max size").starts_with("2.0 MB (" + (store_ / "cubby.conf").string()))
      << text.out;
  {
    cubby::testing::ScopedEnv dir("CUBBY_DIR", store_.string());
    cubby::testing::ScopedEnv size("CUBBY_MAX_SIZE", std::nullopt);
    EXPECT_EQ(cubby::Config::from_env()->max_size, 2'000'000u);  // the library reads the file
  }
  const json overridden = parse(cubby({"stats", "--json"}, {"CUBBY_MAX_SIZE=3Mi"}));
  EXPECT_EQ(overridden["max_size"], 3u << 20);
  EXPECT_EQ(overridden["max_size_origin"], "CUBBY_MAX_SIZE");

  const json listed = parse(cubby({"config", "--json"}));
  ASSERT_EQ(listed["settings"][0]["key"], "max_size");
  EXPECT_EQ(listed["settings"][0]["value"], "2M");
  EXPECT_EQ(listed["settings"][1]["origin"], "default");

  const Outcome bad = cubby({"config", "max_size", "lots"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("lots"), std::string::npos) << bad.err;
  const Outcome unknown = cubby({"config", "max_sise", "1G"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("max_size"), std::string::npos) << unknown.err;
  ASSERT_EQ(cubby({"config", "--unset", "max_size"}).exit_code, 0);
  EXPECT_EQ(parse(cubby({"stats", "--json"}))["max_size_origin"], "default");

  ASSERT_EQ(cubby({"config", "read_only", "true"}).exit_code, 0);
  const Outcome refused = cubby({"gc"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("read-only"), std::string::npos) << refused.err;
  EXPECT_EQ(cubby({"config", "read_only", "false"}).exit_code,
            0);  // fixable from a read-only store
  EXPECT_EQ(cubby({"gc"}).exit_code, 0);
}

TEST_F(AdminCliTest, GcMaxSizeSaysItIsThisRunsBound) {
  const Outcome gc = cubby({"gc", "--max-size", "100K"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("this run only"), std::string::npos) << gc.out;
  EXPECT_NE(gc.out.find("cubby config max_size 100K"), std::string::npos) << gc.out;
  const json report = parse(cubby({"gc", "--json", "--max-size", "100K"}));
  EXPECT_EQ(report["max_size"], 100'000u);
  EXPECT_EQ(report["configured_max_size"], 5ull << 30);
}

TEST_F(AdminCliTest, GcOlderThanRemovesEntriesUnusedForThatLong) {
  const std::string old_key = put_blob("cupy", "old");
  const std::string new_key = put_blob("cupy", "new");
  const fs::path old_path = store_ / "entries" / old_key.substr(0, 2) / (old_key + ".entry");
  fs::last_write_time(old_path, fs::file_time_type::clock::now() - std::chrono::hours(24 * 8));
  const Outcome bad = cubby({"gc", "--older-than", "soon"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("7d"), std::string::npos) << bad.err;
  const json report = parse(cubby({"gc", "--json", "--older-than", "7d"}));
  EXPECT_EQ(report["aged_out"], 1u);
  EXPECT_EQ(report["older_than_s"], 7 * 86400);
  EXPECT_FALSE(fs::exists(old_path));
  const json rows = parse(cubby({"ls", "--json"}));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["key"], new_key);
  EXPECT_EQ(parse(cubby({"stats", "--json"}))["evictions"], 1);
}

TEST_F(AdminCliTest, ClearNamespaceRemovesOnlyThatNamespace) {
  const Outcome compiled = cubby({"compile", kernel_.string(), "--arch", "sm_90", "--json"});
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  put_blob("cupy", "a");
  put_blob("cupy", "b");
  put_blob("other", "c");
  const json cleared = parse(cubby({"clear", "--namespace", "cupy", "--json"}));
  EXPECT_EQ(cleared["removed"], 2u);
  EXPECT_EQ(cleared["namespace"], "cupy");
  std::multiset<std::string> left;
  for (const auto& row : parse(cubby({"ls", "--json"}))) left.insert(row["namespace"]);
  EXPECT_EQ(left, (std::multiset<std::string>{"other", "programs"}));
  EXPECT_EQ(parse(cubby({"clear", "--namespace", "programs", "--json"}))["removed"], 1u);
  EXPECT_EQ(parse(cubby({"ls", "--json"})).size(), 1u);
}

// `clear --namespace ''` read as "no namespace" and removed every entry.
TEST_F(AdminCliTest, ClearWithAnEmptyNamespaceIsAUsageErrorAndRemovesNothing) {
  put_blob("cupy", "a");
  const Outcome empty = cubby({"clear", "--namespace", ""});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("an empty namespace"), std::string::npos) << empty.err;
  EXPECT_EQ(parse(cubby({"ls", "--json"})).size(), 1u);
}

// `gc --target nan` evicted nothing and said nothing; `warm --timeout 1e16` overflowed its
// deadline and failed every recipe at once, exit 0. Both are usage errors now.
TEST_F(AdminCliTest, NumberOptionsRefuseNanInfinityAndOutOfRangeValues) {
  put_blob("cupy", "a");
  for (const char* target : {"nan", "NaN", "inf", "-0.5", "1.5", "1e308", "", "0.5x"}) {
    const Outcome gc = cubby({"gc", "--max-size", "1", "--target", target});
    EXPECT_EQ(gc.exit_code, 2) << target << ": " << gc.err;
    EXPECT_NE(gc.err.find("expected a number"), std::string::npos) << gc.err;
  }
  for (const char* timeout : {"1e10", "1e16", "1e308", "nan", "inf", "0", "-1", "86401"}) {
    const Outcome warm = cubby({"warm", "--timeout", timeout});
    EXPECT_EQ(warm.exit_code, 2) << timeout << ": " << warm.err;
    EXPECT_NE(warm.err.find("expected a number over 0 and at most 86400"), std::string::npos)
        << warm.err;
  }
  EXPECT_EQ(cubby({"gc", "--target", "0.5"}).exit_code, 0);
  EXPECT_EQ(cubby({"warm", "--timeout", "0.5"}).exit_code, 0);
}

// `cubby compile /dev/zero` read until memory ran out, a FIFO blocked it: only regular files are
// read (links followed), at most io::kMaxReadBytes.
TEST_F(AdminCliTest, CompileAndRecoverReadOnlyRegularFiles) {
  const fs::path fifo = root_ / "pipe.cu";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const fs::path zero_link = root_ / "zero.cu";
  fs::create_symlink("/dev/zero", zero_link);
  for (const fs::path& input : {fs::path("/dev/zero"), fifo, zero_link, root_.path()}) {
    for (const char* command : {"compile", "recover"}) {
      const Outcome run = cubby({command, input.string()});
      EXPECT_EQ(run.exit_code, 2) << command << " " << input << ": " << run.err;
      EXPECT_NE(run.err.find("not a regular file"), std::string::npos) << run.err;
    }
  }
  const fs::path link = root_ / "link.cu";
  fs::create_symlink(kernel_, link);  // a link to a regular file is read
  EXPECT_EQ(cubby({"compile", link.string(), "--arch", "sm_90", "--json"}).exit_code, 0);
}

// One bad line of the store's cubby.conf made every process on the store exit 2; it is warned
// about and the key keeps its default.
TEST_F(AdminCliTest, ABadStoreConfigLineIsAWarningNotAFailure) {
  fs::create_directories(store_);
  write_text(store_ / "cubby.conf", std::string("max_size = 5\0G\nthis is no setting\n", 34));
  const Outcome stats = cubby({"stats", "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_NE(stats.err.find("cubby.conf:1: max_size = \"5\\0G\" is not valid"), std::string::npos)
      << stats.err;
  EXPECT_NE(stats.err.find("cubby.conf:2"), std::string::npos) << stats.err;
  EXPECT_EQ(cubby({"compile", kernel_.string(), "--arch", "sm_90"}).exit_code, 0);
}

// Issue 34 item 2, through the tool: a group member's cubby.conf named the member's server and
// the victim's own 0600 token file, and `cubby compile` sent the token there as a bearer token.
// Now a file another user may have written names no remote and no file (said once, naming its
// owner); the victim's own file still does (the control: the token does reach that server).
TEST_F(AdminCliTest, AStoreConfigAnotherUserMayHaveWrittenNeverGetsMyTokenSent) {
  const fs::path token = root_ / "token";
  write_text(token, "victims-secret-token\n");
  ::chmod(token.c_str(), 0600);
  for (const char* writer : {"me", "my group", "another user"}) {
    SCOPED_TRACE(writer);
    cubby::testing::HttpFake server({{"GET", cubby::testing::HttpFake::answer(404)},
                                     {"PUT", cubby::testing::HttpFake::answer(201)}},
                                    std::chrono::milliseconds(50));
    fs::remove_all(store_);
    fs::create_directories(store_);
    write_text(store_ / "cubby.conf", "remote = " + server.url() + "/cache\nremote_token_file = " +
                                          token.string() + "\nremote_mode = read\n");
    ::chmod((store_ / "cubby.conf").c_str(), std::string(writer) == "my group" ? 0664 : 0644);
    if (std::string(writer) == "another user") {
      const std::string why = cubby::testing::give_to_another_user(store_ / "cubby.conf");
      if (!why.empty()) GTEST_SKIP() << why;
    }
    const Outcome run = cubby({"compile", kernel_.string(), "--arch", "sm_90", "--name-expr",
                               "ns::k<float, 1>", "--json"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    if (std::string(writer) == "me") {
      EXPECT_GE(server.received("GET"), 1) << run.err;
      EXPECT_NE(server.last_head().find("Bearer victims-secret-token"), std::string::npos);
      EXPECT_EQ(run.err.find("warning"), std::string::npos) << run.err;
      continue;
    }
    EXPECT_EQ(server.received("GET") + server.received("PUT"), 0);
    EXPECT_EQ(server.last_head().find("victims-secret-token"), std::string::npos);
    struct stat st {};
    ASSERT_EQ(::stat((store_ / "cubby.conf").c_str(), &st), 0);
    const std::string why = std::string(writer) == "my group"
                                ? "is writable by its group (mode 0664)"
                                : "is owned by " + cubby::io::user_text(st.st_uid);
    EXPECT_NE(run.err.find((store_ / "cubby.conf").string() + " " + why), std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find("remote, remote_token_file settings are ignored"), std::string::npos)
        << run.err;
    const std::size_t first = run.err.find("settings are ignored");
    EXPECT_EQ(run.err.find("settings are ignored", first + 1), std::string::npos) << run.err;
    // `cubby config` shows the remote as unset and why the file's value is not used.
    const Outcome listed = cubby({"config"});
    EXPECT_NE(listed.out.find("is ignored: " + (store_ / "cubby.conf").string() + " " + why),
              std::string::npos)
        << listed.out;
  }
}

TEST_F(AdminCliTest, StatsZeroRecordsSince) {
  EXPECT_TRUE(parse(cubby({"stats", "--json"}))["since"].is_null());
  EXPECT_NE(cubby({"stats"}).out.find("never zeroed"), std::string::npos);
  const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const json zeroed = parse(cubby({"stats", "--zero", "--json"}));
  ASSERT_TRUE(zeroed["since_ms"].is_number()) << zeroed;
  EXPECT_GE(zeroed["since_ms"].get<std::int64_t>(), before);
  EXPECT_LT(zeroed["since_ms"].get<std::int64_t>(), before + 60'000);
  const json later = parse(cubby({"stats", "--json"}));
  EXPECT_EQ(later["since"], zeroed["since"]);
  EXPECT_TRUE(stats_row(cubby({"stats"}).out, "counting since")
                  .starts_with(zeroed["since"].get<std::string>()));
}

TEST_F(AdminCliTest, ExportGzipsWhenTheNameSaysSoAndImportReadsBoth) {
  put_blob("cupy", "a");
  put_blob("cupy", "b");
  for (const char* name : {"store.tar.gz", "store.tgz", "store.tar"}) {
    const fs::path archive = root_ / name;
    const json exported = parse(cubby({"export", archive.string(), "--json"}));
    EXPECT_EQ(exported["entries"], 2u);
    const std::string bytes = read_text(archive);
    const bool gzipped = bytes.size() > 2 && bytes[0] == '\x1f' && bytes[1] == '\x8b';
    EXPECT_EQ(gzipped, std::string(name) != "store.tar") << name;
    EXPECT_EQ(exported["gzip"], gzipped);
    const fs::path fresh = root_ / (std::string("fresh-") + name);
    const json imported =
        parse(cubby({"import", archive.string(), "--json", "--dir", fresh.string()}));
    EXPECT_EQ(imported["imported"], 2u) << name;
  }
  // A gzip stream cut short is an archive defect, not a success.
  const std::string whole = read_text(root_ / "store.tar.gz");
  write_text(root_ / "cut.tar.gz", whole.substr(0, whole.size() / 2));
  const Outcome cut =
      cubby({"import", (root_ / "cut.tar.gz").string(), "--dir", (root_ / "fresh-cut").string()});
  EXPECT_EQ(cut.exit_code, 1);
  EXPECT_NE(cut.err.find("gzip"), std::string::npos) << cut.err;
  // The trailer (CRC-32, then the length: ISIZE) is checked, though the tar reader needs no byte
  // of it: a stream missing its last 4 bytes, or with a wrong CRC-32, is a defect too.
  std::string bad_crc = whole;
  bad_crc[bad_crc.size() - 8] ^= 0x01;
  for (const auto& [tag, bytes] :
       {std::pair{"no-isize", whole.substr(0, whole.size() - 4)}, std::pair{"bad-crc", bad_crc}}) {
    const fs::path archive = root_ / (std::string(tag) + ".tar.gz");
    write_text(archive, bytes);
    const Outcome run = cubby({"import", archive.string(), "--json", "--dir",
                               (root_ / (std::string("fresh-") + tag)).string()});
    EXPECT_EQ(run.exit_code, 1) << tag << ": " << run.out;
    EXPECT_NE(run.err.find("gzip stream is"), std::string::npos) << tag << ": " << run.err;
  }
}

TEST_F(AdminCliTest, ImportOfAnArchiveWithoutCubbyMembersFails) {
  const fs::path folder = root_ / "unrelated";
  fs::create_directories(folder);
  write_text(folder / "notes.txt", "not a cubby entry\n");
  const fs::path archive = root_ / "unrelated.tar";
  const std::string command =
      "tar -C " + root_.path().string() + " -cf " + archive.string() + " unrelated";
  ASSERT_EQ(std::system(command.c_str()), 0);
  const Outcome run = cubby({"import", archive.string()});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("holds no cubby entries"), std::string::npos) << run.err;
}

// Generated from the registry: every command is in the man page and completes in bash.
TEST_F(AdminCliTest, ManPageAndBashCompletionListEveryCommand) {
  const Outcome man = cubby({"--generate", "man"});
  ASSERT_EQ(man.exit_code, 0) << man.err;
  EXPECT_EQ(man.out.find(".TH CUBBY 1"), man.out.find('\n') + 1) << man.out.substr(0, 200);
  const Outcome help = cubby({"--help"});
  const Outcome completion = cubby({"--generate", "bash-completion"});
  ASSERT_EQ(completion.exit_code, 0) << completion.err;
  write_text(root_ / "cubby.bash", completion.out);
  for (const char* command : {"compile", "stats", "ls", "show", "config", "clear", "verify", "gc",
                              "export", "import", "recover", "warm"}) {
    EXPECT_NE(help.out.find(command), std::string::npos) << command;
    EXPECT_NE(man.out.find(".SS \"cubby " + std::string(command)), std::string::npos) << command;
  }
  for (const char* option : {"\\-\\-older\\-than", "\\-\\-namespace", "\\-\\-zero", "max_size"}) {
    EXPECT_NE(man.out.find(option), std::string::npos) << option;
  }
  // bash: "cubby st<TAB>" offers stats; "cubby gc --o<TAB>" offers --older-than.
  const std::string script =
      "source " + (root_ / "cubby.bash").string() +
      "; COMP_WORDS=(cubby st); COMP_CWORD=1; _cubby; echo \"${COMPREPLY[*]}\"" +
      "; COMP_WORDS=(cubby --dir /x gc --o); COMP_CWORD=4; _cubby; echo "
      "\"${COMPREPLY[*]}\"";
  const std::string command = "bash -c '" + script + "' > " + (root_ / "completed.txt").string();
  ASSERT_EQ(std::system(command.c_str()), 0);
  EXPECT_EQ(read_text(root_ / "completed.txt"), "stats\n--older-than\n");
}

// Issue 27 item 2: ccache's options work as in ccache, each the cubby command it stands for.
TEST_F(AdminCliTest, CcacheHabitsWork) {
  parse(cubby({"compile", kernel_.string(), "--arch", "sm_90", "--json", "--name-expr",
               "ns::k<float, 1>"}));
  const Outcome stats = cubby({"-s"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_NE(stats.out.find("compiles"), std::string::npos) << stats.out;
  EXPECT_EQ(parse(cubby({"--show-stats", "--json"}))["compiles"], 1);
  EXPECT_EQ(parse(cubby({"--json", "-s"}))["compiles"], 1);

  ASSERT_EQ(cubby({"-z"}).exit_code, 0);
  EXPECT_EQ(parse(cubby({"--zero-stats", "--json"}))["compiles"], 0);

  for (const std::vector<std::string>& set : {std::vector<std::string>{"-M", "1.5G"},
                                              {"-M1.5G"},
                                              {"--max-size", "1.5G"},
                                              {"--max-size=1.5G"}}) {
    ASSERT_EQ(cubby({"config", "--unset", "max_size"}).exit_code, 0);
    const Outcome run = cubby(set);
    ASSERT_EQ(run.exit_code, 0) << set[0] << ": " << run.err;
    EXPECT_NE(read_text(store_ / "cubby.conf").find("max_size = 1.5G"), std::string::npos);
    EXPECT_EQ(parse(cubby({"stats", "--json"}))["max_size"], 1'500'000'000u) << set[0];
  }
  const Outcome shown = cubby({"-p"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_TRUE(shown.out.find("max_size = 1.5G") != std::string::npos) << shown.out;
  EXPECT_EQ(parse(cubby({"--show-config", "--json"}))["settings"][0]["value"], "1.5G");

  ASSERT_EQ(cubby({"-M", "0"}).exit_code, 0);  // 0: unlimited, as in ccache
  EXPECT_EQ(parse(cubby({"stats", "--json"}))["max_size"], 0);
  EXPECT_NE(cubby({"-s"}).out.find("unlimited"), std::string::npos);

  const json aged = parse(cubby({"--json", "--evict-older-than", "1d"}));
  EXPECT_EQ(aged["older_than_s"], 86400);
  EXPECT_EQ(aged["aged_out"], 0);

  ASSERT_EQ(cubby({"-C"}).exit_code, 0);
  EXPECT_EQ(parse(cubby({"stats", "--json"}))["entries"], 0);
  ASSERT_EQ(cubby({"--clear"}).exit_code, 0);

  const Outcome version = cubby({"-V"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_TRUE(version.out.starts_with("cubby ")) << version.out;
  EXPECT_NE(cubby({"--help"}).out.find("For ccache users"), std::string::npos);

  const Outcome bad = cubby({"-M", "lots"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(bad.err.starts_with("cubby: max_size = \"lots\" is not valid")) << bad.err;
  // A number alone is GiB there, as in ccache: the message says so, not "a number of bytes".
  EXPECT_NE(bad.err.find("a number alone, which is GiB"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find("number of bytes"), std::string::npos) << bad.err;
  const Outcome missing = cubby({"-M"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(missing.err.starts_with("cubby: ")) << missing.err;
}

// Issue 23 item 9: a size setting past its cap is refused by `cubby config` (and so by -M), by
// `gc --max-size`, and in the file by every process: never a wrap.
TEST_F(AdminCliTest, SizesPastTheirCapAreRefusedNeverWrapped) {
  for (const auto& [key, huge] :
       {std::pair{"remote_max_entry", "18446744073709551615"},
        std::pair{"remote_max_entry", "1.5Gi"}, std::pair{"max_size", "2Ei"}}) {
    const Outcome run = cubby({"config", key, huge});
    EXPECT_EQ(run.exit_code, 2) << key << "=" << huge;
    EXPECT_NE(run.err.find("at most"), std::string::npos) << run.err;
  }
  // In the store's file, a bad line degrades (warned, the default applies) as any bad line does.
  write_text(store_ / "cubby.conf", "remote_max_entry = 18446744073709551615\n");
  const Outcome stats = cubby({"stats"});
  EXPECT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_NE(stats.err.find("the default applies"), std::string::npos) << stats.err;
  EXPECT_NE(stats.err.find("remote_max_entry"), std::string::npos) << stats.err;
  EXPECT_NE(stats.err.find("at most 1073741824 bytes (1Gi)"), std::string::npos) << stats.err;
  fs::remove(store_ / "cubby.conf");
  const Outcome gc = cubby({"gc", "--max-size", "99999999999999999999"});
  EXPECT_EQ(gc.exit_code, 2);
  EXPECT_TRUE(gc.err.starts_with("cubby: --max-size")) << gc.err;
}

// Issue 27 item 4: naming a namespace or a suite that is not there is a failure with a message.
TEST_F(AdminCliTest, ClearOfAnUnknownNamespaceAndWarmOfAnUnknownSuiteFail) {
  parse(cubby({"compile", kernel_.string(), "--arch", "sm_90", "--json", "--name-expr",
               "ns::k<float, 1>"}));
  const Outcome clear = cubby({"clear", "--namespace", "nope"});
  EXPECT_EQ(clear.exit_code, 1);
  EXPECT_NE(clear.err.find("namespace 'nope'"), std::string::npos) << clear.err;
  EXPECT_NE(clear.err.find("its namespaces are: programs"), std::string::npos) << clear.err;
  EXPECT_EQ(parse(cubby({"stats", "--json"}))["entries"], 1);  // nothing removed
  EXPECT_EQ(parse(cubby({"clear", "--namespace", "programs", "--json"}))["removed"], 1);

  const Outcome warm = cubby({"warm", "--suite", "nosuch"});
  EXPECT_EQ(warm.exit_code, 1);
  EXPECT_NE(warm.err.find("no recipes are recorded for suite 'nosuch'"), std::string::npos)
      << warm.err;
  const Outcome json_warm = cubby({"warm", "--suite", "nosuch", "--json"});
  EXPECT_EQ(json_warm.exit_code, 1);
  EXPECT_EQ(cli_json(json_warm)["unknown_suites"], json::array({"nosuch"}));
  EXPECT_EQ(cubby({"warm", "--suite", "nosuch", "--prefetch"}).exit_code, 0);  // best effort
}

// Issue 27 item 5: the man page lists every variable (ENVIRONMENT from the store's settings and
// the process variables), the ccache options, and no validator names; `show <TAB>` offers keys.
TEST_F(AdminCliTest, ManPageAndCompletionCoverVariablesCcacheOptionsAndKeys) {
  const Outcome man = cubby({"--generate", "man"});
  ASSERT_EQ(man.exit_code, 0) << man.err;
  const std::string environment = man.out.substr(man.out.find(".SH ENVIRONMENT"));
  for (const char* variable : {"CUBBY_DIR", "CUBBY_MAX_SIZE", "CUBBY_ARCH", "CUBBY_DISABLE",
                               "CUBBY_BASE_DIR", "CUBBY_REMOTE_SECRET", "CUBBY_JOBS"}) {
    EXPECT_NE(environment.find(variable), std::string::npos) << variable;
  }
  EXPECT_NE(man.out.find("FOR CCACHE USERS"), std::string::npos);
  EXPECT_NE(man.out.find("\\-\\-evict\\-older\\-than"), std::string::npos);
  EXPECT_EQ(man.out.find("POSITIVE"), std::string::npos);
  EXPECT_EQ(cubby({"warm", "--help"}).out.find("POSITIVE"), std::string::npos);

  const json compiled = parse(cubby({"compile", kernel_.string(), "--arch", "sm_90", "--json",
                                     "--name-expr", "ns::k<float, 1>"}));
  const std::string key = compiled["key"];
  const Outcome completion = cubby({"--generate", "bash-completion"});
  write_text(root_ / "cubby.bash", completion.out);
  const std::string script = "source " + (root_ / "cubby.bash").string() +
                             "; COMP_WORDS=(cubby --dir " + store_.string() + " show " +
                             key.substr(0, 3) + "); COMP_CWORD=4; _cubby; echo \"${COMPREPLY[*]}\"";
  const std::string command = "PATH=" + fs::path(CUBBY_CLI_PATH).parent_path().string() +
                              ":$PATH bash -c '" + script + "' > " +
                              (root_ / "completed.txt").string();
  ASSERT_EQ(std::system(command.c_str()), 0);
  EXPECT_EQ(read_text(root_ / "completed.txt"), key + "\n");
}

// Issue 27 item 5: plurals ("1 name", not "1 names").
TEST_F(AdminCliTest, CountsOfOneAreSingular) {
  parse(cubby({"compile", kernel_.string(), "--arch", "sm_90", "--json", "--name-expr",
               "ns::k<float, 1>"}));
  const Outcome ls = cubby({"ls", "-v"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_NE(ls.out.find(" 1 name\n"), std::string::npos) << ls.out;
  EXPECT_EQ(ls.out.find("1 names"), std::string::npos) << ls.out;
}

// README's advice holds: `cubby compile FILE` and the library with no program name give one key.
TEST_F(AdminCliTest, CompileAndTheLibraryGiveOneKeyForOneSource) {
  const Outcome run = cubby(
      {"compile", kernel_.string(), "--arch", "sm_90", "--json", "--name-expr", "ns::k<float, 1>"});
  const json result = parse(run);
  cubby::CompileRequest request;
  request.source = kKernel;
  request.arch = "sm_90";
  request.name_expressions = {"ns::k<float, 1>"};
  EXPECT_EQ(result["key"], cache()->key_of(request).hex());
  EXPECT_EQ(result["program_name"], cubby::CompileRequest{}.program_name);
  const double compile_ms = result["compile_ms"];
  EXPECT_EQ(compile_ms, std::round(compile_ms * 1000.0) / 1000.0);  // rounded to microseconds
}

}  // namespace
