// The HTTP(S) remote (core/src/storage/remote/http/http.cpp) against a real nginx (WebDAV PUT,
// HTTPS with a CA the test made, basic and bearer auth, a read-only location, a redirect) started
// once for this binary, and against a fake server for the faults nginx does not make on demand: a
// body that drips, 5xx / 429 / 401, a full disk (507), a body over the limit. Each fault is a miss
// or a dropped write, said once, within the call's deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "http_fake.hpp"
#include "nginx_server.hpp"
#include "remote_key.hpp"
#include "storage/remote/http/http.hpp"
#include "tls_fake.hpp"

namespace cubby {
namespace {

using testing::HttpFake;
using testing::NginxServer;
using testing::TlsFake;
using Clock = std::chrono::steady_clock;

Key key_of(std::uint8_t fill) {
  Key key;
  key.bytes.fill(fill);
  return key;
}

HttpOptions options(const std::string& url,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(300)) {
  HttpOptions o;
  o.url = parse_http_url(url).value_or_throw();
  o.location = redact_remote_url(url);
  o.timeout = timeout;
  o.backoff = std::chrono::seconds(60);
  o.compress = false;  // the stored file is the value itself
  return o;
}

std::chrono::milliseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

// How many lines of `text` are cubby's messages.
int messages(const std::string& text) {
  int count = 0;
  for (std::size_t at = text.find("cubby: "); at != std::string::npos;
       at = text.find("cubby: ", at + 1)) {
    ++count;
  }
  return count;
}

TEST(HttpUrl, ParsesAndRefusesWhatIsNotAnHttpUrl) {
  auto url = parse_http_url("https://us%40er:p%3Ass@cache.example:8443/team/main/");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_EQ(url->base, "https://cache.example:8443/team/main");
  EXPECT_EQ(url->user, "us@er");
  EXPECT_EQ(url->password, "p:ss");
  for (const char* bad : {"ftp://host/x", "http:///nohost", "http://host/x?query=1",
                          "http://host/x#fragment", "https//host"}) {
    EXPECT_FALSE(parse_http_url(bad)) << bad;
  }
  EXPECT_FALSE(parse_http_layout("subdirs"));
}

TEST(HttpUrl, HostsPortsEscapesAndWhatIsRefused) {
  const auto base = [](const char* text) {
    auto url = parse_http_url(text);
    return url ? url->base : "(refused: " + url.error().message + ")";
  };
  EXPECT_EQ(base("http://[::1]:8080/cache"), "http://[::1]:8080/cache");
  EXPECT_EQ(base("http://[fe80::1]/"), "http://[fe80::1]");
  EXPECT_EQ(base("http://cache.example"), "http://cache.example");
  // An empty port is the scheme's own; escapes in paths are kept as they are.
  EXPECT_EQ(base("http://cache.example:/x//"), "http://cache.example/x");
  EXPECT_EQ(base("https://h:65535/a%20b"), "https://h:65535/a%20b");
  auto only_user = parse_http_url("http://robot@h/x");
  ASSERT_TRUE(only_user);
  EXPECT_EQ(only_user->user, "robot");
  EXPECT_EQ(only_user->password, "");
  auto at_in_password = parse_http_url("http://u:p@ss@h/x");  // the last '@' ends the user info
  ASSERT_TRUE(at_in_password);
  EXPECT_EQ(at_in_password->password, "p@ss");
  EXPECT_EQ(at_in_password->base, "http://h/x");
  for (const char* bad :
       {"http://h:65536/x", "http://h:8o/x", "http://h:123456/x", "http://[::1/x", "http://[]/x",
        "http://[::1]8080/x", "http://a]b/x", "http://h/a b", "http://h/a\tb", "http://h/\"x\"",
        "http://u%zz:p@h/x", "http://u:p%4@h/x", "http://@/x", "http://u:p@/x", "http://h:0/x"}) {
    auto url = parse_http_url(bad);
    ASSERT_FALSE(url) << bad;
    EXPECT_EQ(url.error().code, Errc::invalid_argument) << bad;
    EXPECT_EQ(url.error().message.find("p%4"), std::string::npos);  // no credentials said
  }
}

// What a request is made of: where to connect, the Host header, the path before the key.
TEST(HttpUrl, TheEndpointHostHeaderAndPrefixOfARequest) {
  auto v6 = parse_http_url("https://u:p@[::1]:8443/team/main/");
  ASSERT_TRUE(v6) << v6.error().message;
  EXPECT_TRUE(v6->tls);
  EXPECT_EQ(v6->endpoint.host, "::1");
  EXPECT_EQ(v6->endpoint.port, 8443);
  EXPECT_EQ(v6->authority, "[::1]:8443");
  EXPECT_EQ(v6->prefix, "/team/main");
  auto plain = parse_http_url("http://cache.example");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->tls);
  EXPECT_EQ(plain->endpoint.port, 80);
  EXPECT_EQ(plain->authority, "cache.example");
  EXPECT_EQ(plain->prefix, "");
  EXPECT_EQ(parse_http_url("https://cache.example:/x")->endpoint.port, 443);
}

TEST(HttpUrl, TheBazelLayoutExtendsTheKeyTo64HexDigitsUnderAc) {
  Key key;
  for (std::size_t i = 0; i < key.bytes.size(); ++i) key.bytes[i] = static_cast<std::uint8_t>(i);
  EXPECT_EQ(HttpBackend::key_path(key, HttpLayout::flat), key.hex());
  EXPECT_EQ(HttpBackend::key_path(key, HttpLayout::bazel), "ac/" + key.hex() + key.hex());
}

class NginxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    nginx_ = NginxServer::fresh(&why);
    if (!nginx_) GTEST_SKIP() << why;
  }
  std::string stored(const std::string& path) const {
    const auto file = nginx_->root() / path;
    return std::filesystem::exists(file) ? testing::read_text(file) : std::string("(none)");
  }
  NginxServer* nginx_ = nullptr;
};

TEST_F(NginxTest, PutGetRemoveRoundTripOverWebDavPut) {
  auto tier = open_http_remote(options(nginx_->http_url() + "/main/"));
  const std::string bytes("entry\0bytes", 11);
  auto missing = tier->get(key_of(1));
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_FALSE(missing->has_value());
  ASSERT_TRUE(tier->put(key_of(1), bytes));
  EXPECT_EQ(stored("main/" + key_of(1).hex()), bytes);  // <prefix>/<key>: a plain file
  auto found = tier->get(key_of(1));
  ASSERT_TRUE(found && found->has_value());
  EXPECT_EQ(**found, bytes);
  ASSERT_TRUE(tier->remove(key_of(1)));
  EXPECT_EQ(stored("main/" + key_of(1).hex()), "(none)");
  testing::expect_one_clean_round_trip(tier->counters(), bytes.size());
}

TEST_F(NginxTest, SignedAndCompressedValuesRoundTrip) {
  HttpOptions o = options(nginx_->http_url() + "/signed");
  o.secret = "alpha";
  o.compress = true;
  auto tier = open_http_remote(o);
  const std::string bytes(100000, 'k');
  ASSERT_TRUE(tier->put(key_of(2), bytes));
  EXPECT_LT(stored("signed/" + key_of(2).hex()).size(), bytes.size());
  auto found = tier->get(key_of(2));
  ASSERT_TRUE(found && found->has_value());
  EXPECT_EQ(**found, bytes);
}

TEST_F(NginxTest, TheBazelLayoutWritesWhereBazelRemoteKeepsItsActionCache) {
  HttpOptions o = options(nginx_->http_url() + "/bazel");
  o.layout = HttpLayout::bazel;
  auto tier = open_http_remote(o);
  ASSERT_TRUE(tier->put(key_of(3), "bazel"));
  EXPECT_EQ(stored("bazel/ac/" + key_of(3).hex() + key_of(3).hex()), "bazel");
  auto found = tier->get(key_of(3));
  ASSERT_TRUE(found && found->has_value());
}

TEST_F(NginxTest, HttpsIsVerifiedAgainstTheCaFile) {
  HttpOptions o = options(nginx_->https_url() + "/tls");
  o.tls.ca_file = nginx_->ca_file().string();
  auto tier = open_http_remote(o);
  ASSERT_TRUE(tier->put(key_of(4), "over tls"));
  auto found = tier->get(key_of(4));
  ASSERT_TRUE(found && found->has_value()) << (found ? "miss" : found.error().message);
  EXPECT_EQ(**found, "over tls");
}

TEST_F(NginxTest, AWrongCaIsAMissSaidOnceWithinTheDeadline) {
  HttpOptions o = options(nginx_->https_url() + "/tls");
  o.tls.ca_file = nginx_->wrong_ca_file().string();
  auto tier = open_http_remote(o);
  ::testing::internal::CaptureStderr();
  const auto start = Clock::now();
  auto first = tier->get(key_of(4));
  auto second = tier->get(key_of(4));
  const auto took = since(start);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(first);
  EXPECT_NE(first.error().message.find("CUBBY_REMOTE_CA_FILE"), std::string::npos)
      << first.error().message;
  EXPECT_FALSE(second);  // skipped: the breaker is open
  EXPECT_LT(took, std::chrono::milliseconds(2000));
  EXPECT_EQ(messages(err), 1) << err;
  EXPECT_FALSE(tier->put(key_of(5), "x"));
  EXPECT_EQ(stored("tls/" + key_of(5).hex()), "(none)");
  EXPECT_EQ(tier->counters().remote_errors, 1u);
}

TEST_F(NginxTest, BasicAuthComesFromTheUrlAndAWrongPasswordIsAMissSaidOnce) {
  const std::string host = nginx_->http_url().substr(7);
  auto tier = open_http_remote(options("http://cubby:hunter2@" + host + "/auth"));
  ASSERT_TRUE(tier->put(key_of(6), "authorised"));
  auto found = tier->get(key_of(6));
  ASSERT_TRUE(found && found->has_value());

  auto wrong = open_http_remote(options("http://cubby:wrong-secret@" + host + "/auth"));
  ::testing::internal::CaptureStderr();
  auto refused = wrong->get(key_of(6));
  auto skipped = wrong->get(key_of(6));
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("HTTP 401"), std::string::npos);
  EXPECT_FALSE(skipped);
  EXPECT_EQ(messages(err), 1) << err;
  EXPECT_EQ(err.find("wrong-secret"), std::string::npos) << err;
}

TEST_F(NginxTest, TheBearerTokenIsSentWhenTheUrlHasNoPassword) {
  HttpOptions o = options(nginx_->http_url() + "/bearer");
  o.bearer_token = "s3cret-token";
  auto tier = open_http_remote(o);
  ASSERT_TRUE(tier->put(key_of(7), "with a token"));
  auto found = tier->get(key_of(7));
  ASSERT_TRUE(found && found->has_value());
  auto without = open_http_remote(options(nginx_->http_url() + "/bearer"));
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(without->get(key_of(7)));
  ::testing::internal::GetCapturedStderr();
}

TEST_F(NginxTest, TheBearerTokenComesFromTheVariableElseTheFirstLineOfTheTokenFile) {
  testing::TempDir dir("token");
  testing::write_text(dir / "token", "s3cret-token\nignored\n");
  Config config;
  config.remote_url = nginx_->http_url() + "/bearer";
  config.remote_token_file = dir / "token";
  auto tier = open_remote_tier(config);
  ASSERT_NE(tier, nullptr);
  ASSERT_TRUE(tier->put(key_of(13), "token from a file"));
  config.remote_token = "not-the-token";  // the variable wins over the file
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(open_remote_tier(config)->get(key_of(13)));
  ::testing::internal::GetCapturedStderr();
  config.remote_token.clear();
  config.remote_token_file = dir / "missing";
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(open_remote_tier(config), nullptr);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("CUBBY_REMOTE_TOKEN_FILE"), std::string::npos) << err;
  // A token is sent in a header line as it is: one with a control character is refused.
  config.remote_token = "tok\r\nX-Injected: 1";
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(open_remote_tier(config), nullptr);
  const std::string refused = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(refused.find("control character"), std::string::npos) << refused;
  EXPECT_EQ(refused.find("X-Injected"), std::string::npos) << refused;  // the token is not said
}

TEST_F(NginxTest, AServerThatRefusesWritesMakesTheProcessOnlyRead) {
  auto tier = open_http_remote(options(nginx_->http_url() + "/readonly"));
  ::testing::internal::CaptureStderr();
  auto refused = tier->put(key_of(8), "refused");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(refused);
  EXPECT_FALSE(tier->writable());
  EXPECT_EQ(messages(err), 1) << err;
  EXPECT_NE(err.find("refuses writes"), std::string::npos) << err;
  tier->put_later(key_of(9), "not queued");
  tier->drain();
  EXPECT_EQ(tier->counters().remote_writes_dropped, 1u);
  auto read = tier->get(key_of(8));  // reads go on
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_FALSE(read->has_value());
}

TEST_F(NginxTest, RedirectsAreNotFollowed) {
  auto main = open_http_remote(options(nginx_->http_url() + "/main"));
  ASSERT_TRUE(main->put(key_of(10), "behind a redirect"));
  auto redirected = open_http_remote(options(nginx_->http_url() + "/redirect"));
  ::testing::internal::CaptureStderr();
  auto found = redirected->get(key_of(10));
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(found);
  EXPECT_NE(found.error().message.find("HTTP 302"), std::string::npos) << found.error().message;
  EXPECT_NE(err.find("does not follow"), std::string::npos) << err;
  EXPECT_EQ(messages(err), 1) << err;
}

TEST_F(NginxTest, LayersReadTheReadOnlyMainAndWriteOnlyTheOverlay) {
  auto main = open_http_remote(options(nginx_->http_url() + "/layer-main"));
  ASSERT_TRUE(main->put(key_of(11), "main's"));
  Config config;
  config.remote_url =
      nginx_->http_url() + "/layer-main|read-only " + nginx_->http_url() + "/layer-pr";
  config.remote_compress = false;
  auto layered = open_remote_tier(config);
  ASSERT_NE(layered, nullptr);
  auto found = layered->get(key_of(11));
  ASSERT_TRUE(found && found->has_value());
  EXPECT_EQ(**found, "main's");
  layered->put_later(key_of(12), "the PR's");
  layered->drain();
  EXPECT_EQ(stored("layer-pr/" + key_of(12).hex()), "the PR's");
  EXPECT_EQ(stored("layer-main/" + key_of(12).hex()), "(none)");
  EXPECT_EQ(stored("layer-pr/" + key_of(11).hex()), "(none)");  // a hit is copied nowhere
}

// A fake server answering every method with `answer` (HEAD too).
std::unique_ptr<HttpFake> fake(HttpFake::Answer answer,
                               std::chrono::milliseconds interval = std::chrono::milliseconds(50)) {
  return std::make_unique<HttpFake>(
      std::map<std::string, HttpFake::Answer>{{"GET", answer}, {"PUT", answer}, {"HEAD", answer}},
      interval);
}

TEST(HttpFaults, ABodyThatDripsEndsAtTheDeadlineAsAMissSaidOnce) {
  auto server = fake({"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", "x"});
  auto tier = open_http_remote(options(server->url() + "/drip", std::chrono::milliseconds(300)));
  ::testing::internal::CaptureStderr();
  const auto start = Clock::now();
  auto dripped = tier->get(key_of(1));
  const auto took = since(start);
  auto skipped = tier->get(key_of(1));
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(dripped);
  EXPECT_GE(took, std::chrono::milliseconds(250));
  EXPECT_LT(took, std::chrono::milliseconds(1500));
  EXPECT_EQ(tier->counters().remote_timeouts, 1u);
  EXPECT_FALSE(skipped);
  EXPECT_EQ(server->received("GET"), 1);
  EXPECT_EQ(messages(err), 1) << err;
}

TEST(HttpFaults, ServerErrorsTooManyRequestsAndUnauthorisedAreMissesThenSkipped) {
  for (int status : {500, 503, 429, 401}) {
    auto server = fake(HttpFake::answer(status, "go away"));
    auto tier = open_http_remote(options(server->url()));
    ::testing::internal::CaptureStderr();
    auto failed = tier->get(key_of(1));
    auto skipped = tier->get(key_of(1));
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_FALSE(failed) << status;
    EXPECT_EQ(failed.error().code, Errc::io) << status;
    EXPECT_FALSE(skipped) << status;
    EXPECT_EQ(server->received("GET"), 1) << status;  // the second was skipped
    EXPECT_EQ(messages(err), 1) << status << ": " << err;
  }
}

TEST(HttpFaults, AFullUpstreamDiskDropsWritesSaidOnceAndReadsGoOn) {
  HttpFake server({{"PUT", HttpFake::answer(507)}, {"GET", HttpFake::answer(404)}},
                  std::chrono::milliseconds(50));
  auto tier = open_http_remote(options(server.url()));
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(tier->put(key_of(1), "first"));
  EXPECT_FALSE(tier->put(key_of(2), "second"));
  auto read = tier->get(key_of(1));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(server.received("PUT"), 2);  // not skipped: the server answers, it is only full
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_FALSE(read->has_value());
  EXPECT_TRUE(tier->writable());
  EXPECT_EQ(tier->counters().remote_writes_dropped, 2u);
  EXPECT_EQ(messages(err), 1) << err;
  EXPECT_NE(err.find("out of space"), std::string::npos) << err;
}

// A GET of a server that answers with `answer`, under a 4 KiB limit and a 5 s deadline: it must
// be refused (counted remote_rejected) well before the deadline.
void expect_refused_at_once(const HttpFake::Answer& answer) {
  auto server = fake(answer);
  HttpOptions o = options(server->url(), std::chrono::milliseconds(5000));
  o.max_entry = 4096;
  auto tier = open_http_remote(o);
  const auto start = Clock::now();
  auto refused = tier->get(key_of(1));
  EXPECT_LT(since(start), std::chrono::milliseconds(1000));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::corrupt);
  EXPECT_EQ(tier->counters().remote_rejected, 1u);
}

TEST(HttpFaults, ABodyDeclaredOverTheLimitIsRefusedBeforeItIsRead) {
  // 100 MB declared, a byte every 50 ms sent: reading it would take for ever.
  expect_refused_at_once({"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n", "x"});
}

TEST(HttpFaults, ABodyWithoutALengthIsAbortedOnceItPassesTheLimit) {
  const std::string chunk(64 << 10, 'z');
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", chunk.size());
  expect_refused_at_once(
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(size) + chunk + "\r\n",
       "y"});
}

TEST(HttpFaults, ConnectionsAreReusedAndOpenedAhead) {
  auto server = fake(HttpFake::answer(404));
  auto tier = open_http_remote(options(server->url() + "/prefix"));
  tier->connect_ahead();
  for (std::uint8_t i = 0; i < 3; ++i) {
    auto missing = tier->get(key_of(i));
    ASSERT_TRUE(missing) << missing.error().message;
  }
  EXPECT_EQ(server->received("HEAD"), 1);
  EXPECT_EQ(server->received("GET"), 3);
  EXPECT_EQ(server->connections(), 1);
  EXPECT_NE(server->last_head().find("GET /prefix/" + key_of(2).hex() + " HTTP/1.1"),
            std::string::npos)
      << server->last_head();
}

// Bodies as HTTP/1.1 frames them: chunked (extensions and a trailer), after an interim 100
// answer, on a connection that carries the next request too.
TEST(HttpProtocol, AChunkedBodyAfterAnInterimAnswerKeepsItsConnection) {
  auto server =
      fake({"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: "
            "chunked\r\n\r\n5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: t\r\n\r\n",
            ""});
  auto tier = open_http_remote(options(server->url()));
  for (std::uint8_t i = 0; i < 2; ++i) {
    auto found = tier->get(key_of(i));
    ASSERT_TRUE(found && found->has_value()) << (found ? "miss" : found.error().message);
    EXPECT_EQ(**found, "hello world");
  }
  EXPECT_EQ(server->connections(), 1);
}

// A body without a length ends with the stream; an HTTP/1.0 answer or `Connection: close` ends
// its connection: the next request opens another.
TEST(HttpProtocol, ABodyEndedByTheStreamAndClosingAnswersOpenANewConnectionEach) {
  for (const std::string& head : {std::string("HTTP/1.1 200 OK\r\n\r\n"),
                                  std::string("HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\n"),
                                  std::string("HTTP/1.1 200 OK\r\nConnection: keep-alive, "
                                              "Close\r\nContent-Length: 4\r\n\r\n")}) {
    SCOPED_TRACE(head);
    HttpFake server({{"GET", {head + "body", "", true}}}, std::chrono::milliseconds(50));
    auto tier = open_http_remote(options(server.url()));
    for (std::uint8_t i = 0; i < 2; ++i) {
      auto found = tier->get(key_of(i));
      ASSERT_TRUE(found && found->has_value()) << (found ? "miss" : found.error().message);
      EXPECT_EQ(**found, "body");
    }
    EXPECT_EQ(server.connections(), 2);
    EXPECT_EQ(tier->counters().remote_errors, 0u);
  }
}

// A server that closes a kept connection between requests (its keep-alive timeout or request
// limit) without saying so: the request goes again, once, on a new connection; nothing fails.
TEST(HttpProtocol, AKeptConnectionTheServerClosedIsOpenedAgain) {
  HttpFake server({{"GET", {HttpFake::answer(200, "value").now, "", true}}},
                  std::chrono::milliseconds(50));
  auto tier = open_http_remote(options(server.url()));
  for (std::uint8_t i = 0; i < 3; ++i) {
    auto found = tier->get(key_of(i));
    ASSERT_TRUE(found && found->has_value()) << (found ? "miss" : found.error().message);
  }
  EXPECT_EQ(server.received("GET"), 3);
  EXPECT_EQ(server.connections(), 3);
  EXPECT_EQ(tier->counters().remote_errors, 0u);
}

// A body without a length ends with the stream only when the stream ends cleanly (TLS's
// close_notify, a plain stream's end): an end without close_notify or a reset may have cut it
// short, an I/O error counted as one, never a shorter value.
TEST(HttpProtocol, ABodyEndedByTheStreamIsCutShortByAnEndWithoutCloseNotifyOrAReset) {
  std::string why;
  NginxServer* nginx = NginxServer::shared(&why);  // for its certificates
  if (nginx == nullptr) GTEST_SKIP() << why;
  const std::string certs = nginx->ca_file().parent_path().string();
  struct Case {
    bool tls;
    TlsFake::End end;
    bool answered;
  };
  for (const Case& c :
       {Case{true, TlsFake::End::close_notify, true},
        Case{true, TlsFake::End::no_close_notify, false}, Case{true, TlsFake::End::reset, false},
        Case{false, TlsFake::End::reset, false}}) {
    SCOPED_TRACE(std::string(c.tls ? "https" : "http") + " end " +
                 std::to_string(static_cast<int>(c.end)));
    TlsFake server(c.tls ? certs + "/server.pem" : "", c.tls ? certs + "/server.key" : "",
                   [&](TlsFake::Peer& peer) {
                     if (!peer.read_http_request()) return;
                     peer.send("HTTP/1.1 200 OK\r\n\r\nthe first half");
                     std::this_thread::sleep_for(std::chrono::milliseconds(50));
                     peer.end_with(c.end);
                   });
    const std::string url =
        std::string(c.tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(server.port());
    HttpOptions o = options(url, std::chrono::milliseconds(2000));
    o.tls.ca_file = nginx->ca_file().string();
    auto tier = open_http_remote(o);
    ::testing::internal::CaptureStderr();
    auto got = tier->get(key_of(1));
    ::testing::internal::GetCapturedStderr();
    if (c.answered) {
      ASSERT_TRUE(got && got->has_value()) << (got ? "miss" : got.error().message);
      EXPECT_EQ(**got, "the first half");
      EXPECT_EQ(tier->counters().remote_errors, 0u);
    } else {
      EXPECT_FALSE(got) << (got->has_value() ? **got : "a miss");
      if (got) continue;
      EXPECT_EQ(got.error().code, Errc::io);
      EXPECT_EQ(tier->counters().remote_errors, 1u);
      EXPECT_EQ(tier->counters().remote_timeouts, 0u);
    }
  }
}

// Bytes that are not an HTTP/1.x answer: a failure of the remote (the breaker opens), said once.
TEST(HttpProtocol, AnAnswerThatIsNotHttpIsAFailureSaidOnce) {
  for (const std::string& answer :
       {std::string("SSH-2.0-OpenSSH_9.2\r\n"), std::string("-ERR unknown\x1b[31m command\r\n"),
        std::string("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"),
        std::string("HTTP/1.1 200 OK\r\nno colon\r\n\r\n"),
        std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")}) {
    SCOPED_TRACE(answer);
    auto server = fake({answer, ""});
    auto tier = open_http_remote(options(server->url()));
    ::testing::internal::CaptureStderr();
    auto failed = tier->get(key_of(1));
    auto skipped = tier->get(key_of(1));
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().code, Errc::io);
    EXPECT_NE(failed.error().message.find("HTTP server"), std::string::npos)
        << failed.error().message;
    EXPECT_EQ(failed.error().message.find('\x1b'), std::string::npos);  // shown printable
    EXPECT_FALSE(skipped);
    EXPECT_EQ(server->received("GET"), 1);
    EXPECT_EQ(tier->counters().remote_errors, 1u);
    EXPECT_EQ(messages(err), 1) << err;
  }
}

// A flood of `100 Continue` answers, or a chunked body whose trailer never ends, sent as fast as
// the connection takes it: the answer is refused at the head's bound of 100 lines, at once (not at
// the 5 s deadline, having read all of it), as a failure said once.
TEST(HttpProtocol, AFloodOfInterimAnswersOrAnEndlessTrailerIsAFailureSaidOnceAtOnce) {
  std::string flood;
  std::string trailer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n";
  for (int i = 0; i < 100000; ++i) {
    flood += "HTTP/1.1 100 Continue\r\n\r\n";
    trailer += "X-Trailer: t\r\n";
  }
  for (const std::string& answer : {flood, trailer}) {
    SCOPED_TRACE(answer.substr(0, 60));
    auto server = fake({answer, ""});
    auto tier = open_http_remote(options(server->url(), std::chrono::milliseconds(5000)));
    ::testing::internal::CaptureStderr();
    const auto start = Clock::now();
    auto failed = tier->get(key_of(1));
    const auto took = since(start);
    auto skipped = tier->get(key_of(1));
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().code, Errc::io);
    EXPECT_NE(failed.error().message.find("over 100 lines"), std::string::npos)
        << failed.error().message;
    EXPECT_LT(took, std::chrono::milliseconds(2500));
    EXPECT_FALSE(skipped);
    EXPECT_EQ(server->received("GET"), 1);
    EXPECT_EQ(tier->counters().remote_errors, 1u);
    EXPECT_EQ(tier->counters().remote_timeouts, 0u);
    EXPECT_EQ(messages(err), 1) << err;
  }
}

// An error page (a 404 with a body) is read and dropped: the connection carries the next request.
TEST(HttpProtocol, AnErrorPagesBodyIsReadAndTheConnectionKept) {
  auto server = fake(HttpFake::answer(404, "<html>not found</html>"));
  auto tier = open_http_remote(options(server->url()));
  for (std::uint8_t i = 0; i < 3; ++i) {
    auto missing = tier->get(key_of(i));
    ASSERT_TRUE(missing) << missing.error().message;
    EXPECT_FALSE(missing->has_value());
  }
  EXPECT_EQ(server->connections(), 1);
}

}  // namespace
}  // namespace cubby
