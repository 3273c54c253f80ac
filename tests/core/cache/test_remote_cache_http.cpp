// The orchestrator with HTTP remotes, end to end with real NVRTC: layers against a real nginx (a
// pull-request job reads main read-only, back-fills its disk, writes only its overlay), layers of
// fake servers (a bad value in main does not hide the overlay's entry) and a remote that fails
// (nothing lost locally). Each "machine" is a Cache on its own store folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <random>

#include "cubby/cache.hpp"
#include "cubby/entry.hpp"
#include "format/blob.hpp"
#include "http_fake.hpp"
#include "nginx_server.hpp"
#include "storage/local/disk.hpp"

namespace cubby {
namespace {

using testing::HttpFake;
using testing::NginxServer;
using testing::TempDir;

// A program of its own per test (a salt in a comment), so keys never collide.
CompileRequest request(const std::string& salt, int variant) {
  CompileRequest r;
  r.source = "// " + salt + "\nnamespace ns {\ntemplate <class T> __global__ void fill(T* out) " +
             "{ out[threadIdx.x] = T(" + std::to_string(variant) + "); }\n}\n";
  r.program_name = "remote_http_test.cu";
  r.name_expressions = {"ns::fill<float>"};
  r.arch = "sm_90";
  return r;
}

std::string salt() {
  std::random_device random;
  return std::to_string(random()) + "-" + std::to_string(random());
}

TEST(RemoteCacheHttp, APullRequestJobReadsMainReadOnlyAndWritesOnlyItsOverlay) {
  std::string why;
  NginxServer* nginx = NginxServer::fresh(&why);
  if (!nginx) GTEST_SKIP() << why;
  const std::string run = salt();
  const std::string main_url = nginx->http_url() + "/main-" + run;
  const std::string pr_url = nginx->http_url() + "/pr-" + run;
  const auto main_file = [&](const Key& key) {
    return nginx->root() / ("main-" + run) / key.hex();
  };
  const auto pr_file = [&](const Key& key) { return nginx->root() / ("pr-" + run) / key.hex(); };

  TempDir main_dir("http-main"), pr_dir("http-pr");
  Config main_job;
  main_job.dir = main_dir.path();
  main_job.remote_url = main_url;
  main_job.remote_timeout_ms = 2000;
  CacheResult built;
  {
    Cache main(main_job);
    built = main.compile(request(run, 1));
    EXPECT_EQ(built.tier, Source::compiled);
  }  // destruction drains the background write
  ASSERT_TRUE(std::filesystem::exists(main_file(built.key)));

  Config pr_job = main_job;
  pr_job.dir = pr_dir.path();
  pr_job.remote_url = main_url + "|read-only " + pr_url;
  CacheResult own;
  {
    Cache pr(pr_job);
    const CacheResult from_main = pr.compile(request(run, 1));
    EXPECT_TRUE(from_main.hit);
    EXPECT_EQ(from_main.tier, Source::remote);
    own = pr.compile(request(run, 2));
    EXPECT_EQ(own.tier, Source::compiled);
    EXPECT_EQ(pr.stats().hits_remote, 1u);
  }
  EXPECT_TRUE(std::filesystem::exists(pr_file(own.key)));     // the PR's compile: its overlay
  EXPECT_FALSE(std::filesystem::exists(main_file(own.key)));  // never main
  EXPECT_FALSE(std::filesystem::exists(pr_file(built.key)));  // main's hit: not copied up
  auto backfilled = DiskTier(pr_job.dir).get(built.key);      // but kept on the PR's disk
  ASSERT_TRUE(backfilled && backfilled->has_value());
}

// A pull-request job whose read-only main holds a bad value for an entry — bytes that are no
// entry, or another key's entry — and whose overlay holds the good one: the lookup is a remote hit
// of the overlay's entry and main's value is counted rejected, said once. (A bad value in main
// used to hide the overlay's: every fresh runner compiled that kernel again.)
TEST(RemoteCacheHttp, ABadValueInTheReadOnlyMainDoesNotHideTheOverlaysEntry) {
  const std::string name = "kernel-" + salt();
  const Key key = blob_key("cupy", name);
  const std::string good = encode_entry(key, blob_entry("cupy", name, "the overlay's", 5));
  for (const std::string& bad :
       {std::string("not an entry"),
        encode_entry(blob_key("cupy", name + "-other"),
                     blob_entry("cupy", name + "-other", "another blob", 5))}) {
    SCOPED_TRACE(bad.substr(0, 12));
    HttpFake main({{"GET", HttpFake::answer(200, bad)}}, std::chrono::milliseconds(50));
    HttpFake overlay({{"GET", HttpFake::answer(200, good)}}, std::chrono::milliseconds(50));
    TempDir dir("http-layers");
    Config config;
    config.dir = dir.path();
    config.remote_url = main.url() + "/main|read-only " + overlay.url() + "/pr";
    config.remote_timeout_ms = 2000;
    ::testing::internal::CaptureStderr();
    std::optional<CacheResult> hit;
    Stats counted;
    {
      Cache cache(config);
      hit = cache.load_blob("cupy", name);
      counted = cache.stats();
    }
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(hit.has_value()) << err;
    EXPECT_EQ(hit->tier, Source::remote);
    EXPECT_EQ(hit->entry->payload, "the overlay's");
    EXPECT_EQ(counted.hits_remote, 1u);
    EXPECT_EQ(counted.remote_rejected, 1u);
    EXPECT_EQ(main.received("GET"), 1);
    EXPECT_EQ(overlay.received("GET"), 1);
    EXPECT_EQ(err.find("cubby: "), err.rfind("cubby: ")) << err;  // one message
    EXPECT_NE(err.find(main.url()), std::string::npos) << err;
  }
}

TEST(RemoteCacheHttp, AFullRemoteLosesNothingLocallyAndIsSaidOnce) {
  HttpFake full({{"GET", HttpFake::answer(404)}, {"PUT", HttpFake::answer(507)}},
                std::chrono::milliseconds(50));
  TempDir dir("http-full");
  Config config;
  config.dir = dir.path();
  config.remote_url = full.url() + "/cache";
  const std::string run = salt();
  ::testing::internal::CaptureStderr();
  CacheResult first, second;
  {
    Cache cache(config);
    first = cache.compile(request(run, 1));
    second = cache.compile(request(run, 2));
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(first.tier, Source::compiled);
  EXPECT_EQ(full.received("PUT"), 2);
  for (const Key& key : {first.key, second.key}) {
    auto kept = DiskTier(config.dir).get(key);
    ASSERT_TRUE(kept && kept->has_value());
  }
  EXPECT_EQ(err.find("cubby: "), err.rfind("cubby: ")) << err;  // one message
  EXPECT_NE(err.find("out of space"), std::string::npos) << err;
  Cache again(config);
  EXPECT_EQ(again.compile(request(run, 1)).tier, Source::disk);
}

}  // namespace
}  // namespace cubby
