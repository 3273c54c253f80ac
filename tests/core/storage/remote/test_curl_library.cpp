// libcurl loaded on first use (core/src/storage/remote/curl_library.cpp): the real library gives
// every function; a missing file or a library that is not libcurl is a failure that says what to
// install; a process without an HTTP(S) remote never maps libcurl (a fresh process checks its own
// /proc/self/maps); an http:// remote with CUBBY_CURL_LIBRARY naming no libcurl is said once, is a
// miss, and the kernel is compiled.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cli_process.hpp"
#include "cubby/cache.hpp"
#include "storage/remote/curl_library.hpp"
#include "test_support.hpp"
#include "util/spawn.hpp"

namespace cubby {
namespace {

using testing::CliOutcome;
using testing::TempDir;

constexpr const char* kKernel = "extern \"C\" __global__ void k(int* p) { *p = 7; }\n";

TEST(CurlLibrary, TheSystemLibcurlGivesEveryFunction) {
  auto api = detail::load_curl("libcurl.so.4");
  ASSERT_TRUE(api) << api.error().message;
  EXPECT_NE(api->global_init, nullptr);
  EXPECT_NE(api->easy_init, nullptr);
  EXPECT_NE(api->easy_setopt, nullptr);
  EXPECT_NE(api->easy_getinfo, nullptr);
  EXPECT_NE(api->slist_append, nullptr);
  EXPECT_NE(api->slist_free_all, nullptr);
  CURL* handle = api->easy_init();
  ASSERT_NE(handle, nullptr);
  EXPECT_EQ(api->easy_setopt(handle, CURLOPT_URL, "http://127.0.0.1/"), CURLE_OK);
  long status = -1;
  EXPECT_EQ(api->easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status), CURLE_OK);
  EXPECT_EQ(status, 0);  // no transfer yet
  api->easy_cleanup(handle);
}

TEST(CurlLibrary, AMissingLibraryIsAFailureThatSaysWhatToInstall) {
  auto api = detail::load_curl("/nonexistent/cubby/libcurl.so.4");
  ASSERT_FALSE(api);
  EXPECT_EQ(api.error().code, Errc::io);
  const std::string& message = api.error().message;
  EXPECT_NE(message.find("/nonexistent/cubby/libcurl.so.4"), std::string::npos) << message;
  EXPECT_NE(message.find("libcurl4"), std::string::npos) << message;
  EXPECT_NE(message.find("CUBBY_CURL_LIBRARY"), std::string::npos) << message;
}

TEST(CurlLibrary, ALibraryThatIsNotLibcurlIsAFailure) {
  auto libc = detail::load_curl("libc.so.6");  // loads, but has none of libcurl's functions
  ASSERT_FALSE(libc);
  EXPECT_NE(libc.error().message.find("has no curl_global_init"), std::string::npos)
      << libc.error().message;
  TempDir dir("curl");
  testing::write_text(dir.path() / "libcurl.so.4", "not a library\n");
  auto text = detail::load_curl((dir.path() / "libcurl.so.4").string());
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("libcurl4"), std::string::npos) << text.error().message;
}

// The child half of WithoutARemoteAProcessNeverMapsLibcurl, in a fresh process: a Cache without
// a remote compiles, then hits; libcurl is not in this process's maps.
TEST(CurlStartup, ChildCompilesWithoutMappingLibcurl) {
  const char* store = std::getenv("CUBBY_TEST_CURL_STORE");
  if (store == nullptr) GTEST_SKIP() << "runs only as the child of WithoutARemoteNoLibcurlIsMapped";
  Config config;
  config.dir = store;
  ASSERT_TRUE(config.remote_url.empty());
  Cache cache(config);
  CompileRequest request;
  request.source = kKernel;
  request.program_name = "curl_startup.cu";
  request.arch = "sm_90";
  EXPECT_FALSE(cache.compile(request).hit);
  EXPECT_TRUE(cache.compile(request).hit);
  const std::string maps = testing::read_text("/proc/self/maps");
  EXPECT_EQ(maps.find("libcurl"), std::string::npos) << "libcurl is mapped:\n" << maps;
}

TEST(CurlStartup, WithoutARemoteNoLibcurlIsMapped) {
  TempDir store("curl-startup");
  auto child =
      spawn({"/proc/self/exe",
             {"test_curl_library", "--gtest_filter=CurlStartup.ChildCompilesWithoutMappingLibcurl"},
             child_environment({"CUBBY_TEST_CURL_STORE=" + store.path().string()}, {"CUBBY_"}),
             {}});
  ASSERT_TRUE(child) << child.error().message;
  EXPECT_EQ(wait_exit_code(*child), 0) << "the child mapped libcurl or failed (see its output)";
}

TEST(CurlStartup, ChildHitsAWarmStoreWithAnHttpRemoteWithoutMappingLibcurl) {
  const char* store = std::getenv("CUBBY_TEST_CURL_WARM_STORE");
  if (store == nullptr) {
    GTEST_SKIP() << "runs only as the child of AWarmStoreWithAnHttpRemoteMapsNoLibcurl";
  }
  Config config;
  config.dir = store;
  CompileRequest request;
  request.source = kKernel;
  request.program_name = "curl_startup.cu";
  request.arch = "sm_90";
  { EXPECT_FALSE(Cache(config).compile(request).hit); }  // the store made warm, no remote
  config.remote_url = "http://127.0.0.1:9/cubby";        // nothing listens there: never asked
  Cache cache(config);
  EXPECT_EQ(cache.compile(request).tier, Source::disk);
  const std::string maps = testing::read_text("/proc/self/maps");
  EXPECT_EQ(maps.find("libcurl"), std::string::npos) << "libcurl is mapped:\n" << maps;
}

TEST(CurlStartup, AWarmStoreWithAnHttpRemoteMapsNoLibcurl) {
  TempDir store("curl-warm");
  auto child = spawn(
      {"/proc/self/exe",
       {"test_curl_library",
        "--gtest_filter=CurlStartup.ChildHitsAWarmStoreWithAnHttpRemoteWithoutMappingLibcurl"},
       child_environment({"CUBBY_TEST_CURL_WARM_STORE=" + store.path().string()}, {"CUBBY_"}),
       {}});
  ASSERT_TRUE(child) << child.error().message;
  EXPECT_EQ(wait_exit_code(*child), 0) << "the child mapped libcurl or failed (see its output)";
}

// `cubby compile --json` with an http:// remote and CUBBY_CURL_LIBRARY=`library`.
CliOutcome compile_with_curl(const std::string& library) {
  TempDir store("curl-cli");
  const std::filesystem::path source = store.path() / "k.cu";
  testing::write_text(source, kKernel);
  const testing::CliOutputFiles files{store.path() / "out", store.path() / "err"};
  return testing::finish_cli(
      testing::start_cli(
          {"compile", source.string(), "--json", "--arch", "sm_90"}, store.path() / "store", files,
          {"CUBBY_REMOTE=http://127.0.0.1:9/cubby", "CUBBY_CURL_LIBRARY=" + library}, "CUBBY_"),
      files);
}

// How many times `text` holds `what`.
int occurrences(const std::string& text, const std::string& what) {
  int count = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

TEST(CurlRemote, WithoutLibcurlAnHttpRemoteIsOffSaidOnceAndTheKernelCompiles) {
  TempDir dir("curl-fake");
  testing::write_text(dir.path() / "libcurl.so.4", "not a library\n");
  for (const std::string& library :
       {std::string("/nonexistent/cubby/libcurl.so.4"), std::string("libc.so.6"),
        (dir.path() / "libcurl.so.4").string()}) {
    SCOPED_TRACE(library);
    const CliOutcome run = compile_with_curl(library);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto result = testing::cli_json(run);
    EXPECT_EQ(result.value("tier", ""), "compiled");
    EXPECT_FALSE(result.value("hit", true));
    EXPECT_EQ(occurrences(run.err, "apt-get install libcurl4"), 1) << run.err;
    EXPECT_NE(run.err.find("http://127.0.0.1:9/cubby"), std::string::npos) << run.err;
  }
}

TEST(CurlRemote, StatsSaysAnHttpRemoteIsOffWithoutLibcurl) {
  TempDir store("curl-stats");
  const testing::CliOutputFiles files{store.path() / "out", store.path() / "err"};
  auto stats = [&](const std::string& library, bool json) {
    std::vector<std::string> env{"CUBBY_REMOTE=https://cache.example/cubby redis://127.0.0.1:9"};
    if (!library.empty()) env.push_back("CUBBY_CURL_LIBRARY=" + library);
    std::vector<std::string> args{"stats"};
    if (json) args.emplace_back("--json");
    return testing::finish_cli(
        testing::start_cli(args, store.path() / "store", files, env, "CUBBY_"), files);
  };
  const CliOutcome off = stats("/nonexistent/cubby/libcurl.so.4", true);
  ASSERT_EQ(off.exit_code, 0) << off.err;
  const auto document = testing::cli_json(off);
  EXPECT_NE(document.value("remote_off", "").find("apt-get install libcurl4"), std::string::npos)
      << off.out;
  const CliOutcome text = stats("/nonexistent/cubby/libcurl.so.4", false);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("remote off"), std::string::npos) << text.out;
  const CliOutcome on = stats("", true);  // the system's libcurl
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_FALSE(testing::cli_json(on).contains("remote_off")) << on.out;
}

}  // namespace
}  // namespace cubby
