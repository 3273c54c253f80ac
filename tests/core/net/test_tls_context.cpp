// TLS of remote connections (core/src/net/tls_context.cpp and the TLS half of connection.cpp),
// through rediss:// against a real redis-server with a TLS port and a CA the fixture makes
// (https:// against nginx: storage/remote/http/test_http.cpp):
// the server verified by a CA file or by the system store (SSL_CERT_FILE), by address or host
// name (SNI), a client certificate, and failing safe: a wrong CA is a miss, said once, bounded.
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "drip_server.hpp"
#include "net/tls_context.hpp"
#include "redis_fleet.hpp"
#include "remote_key.hpp"
#include "storage/remote/redis/redis.hpp"
#include "tls_fake.hpp"

namespace cubby {
namespace {

using testing::RedisServer;
using testing::TlsRedis;

Key key_of(std::uint8_t fill) { return testing::process_key(fill); }

class TlsTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    tls_ = TlsRedis::fresh(&why);
    if (tls_ == nullptr) GTEST_SKIP() << why;
  }

  // A Config naming the TLS server, as a user sets it (CUBBY_REMOTE, CUBBY_REMOTE_CA_FILE).
  Config config(const std::string& ca_file, const std::string& host = "127.0.0.1") const {
    Config c;
    c.remote_url = tls_->url(host);
    c.remote_ca_file = ca_file;
    c.remote_timeout_ms = 1000;
    c.remote_backoff_ms = 60000;
    return c;
  }

  static void round_trip(Remote& tier, std::uint8_t fill) {
    auto put = tier.put(key_of(fill), "over tls");
    ASSERT_TRUE(put) << put.error().message;
    auto got = tier.get(key_of(fill));
    ASSERT_TRUE(got && got->has_value()) << (got ? "missing" : got.error().message);
    EXPECT_EQ(**got, "over tls");
  }

  TlsRedis* tls_ = nullptr;
};

TEST_F(TlsTierTest, RoundTripVerifiedByTheCaFileByAddressAndByName) {
  for (const char* host : {"127.0.0.1", "localhost"}) {
    SCOPED_TRACE(host);
    auto tier = open_remote_tier(config(tls_->ca_file(), host));
    ASSERT_NE(tier, nullptr);
    round_trip(*tier, 1);
    // What the plain port sees is what went over TLS.
    auto stored = tls_->server().command({"GET", RedisBackend::redis_key(key_of(1))});
    ASSERT_TRUE(stored && stored->value);
    EXPECT_EQ(*stored->value, "over tls");
  }
}

TEST_F(TlsTierTest, TheSystemStoreHonoursSslCertFile) {
  ::setenv("SSL_CERT_FILE", tls_->ca_file().c_str(), 1);
  auto tier = open_remote_tier(config(""));
  ASSERT_NE(tier, nullptr);
  round_trip(*tier, 2);  // the store is read by the first connection
  ::unsetenv("SSL_CERT_FILE");
}

// Parsing the system store costs OpenSSL 3.0 ~40 ms: a remote without a CA file reads it when its
// first connection needs it, not when it is set up (a process whose lookups all hit locally
// never reads it). SSL_CERT_FILE changed in between shows when it was read.
TEST_F(TlsTierTest, TheSystemStoreIsReadWhenTheFirstConnectionNeedsIt) {
  ::setenv("SSL_CERT_FILE", tls_->wrong_ca_file().c_str(), 1);
  auto tier = open_remote_tier(config(""));
  ASSERT_NE(tier, nullptr);
  ::setenv("SSL_CERT_FILE", tls_->ca_file().c_str(), 1);
  round_trip(*tier, 9);
  ::unsetenv("SSL_CERT_FILE");
}

TEST_F(TlsTierTest, AWrongCaIsAMissSaidOnceAndBoundedInTime) {
  auto tier = open_remote_tier(config(tls_->wrong_ca_file()));
  ASSERT_NE(tier, nullptr);
  ::testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(tier->get(key_of(3)));
  EXPECT_FALSE(tier->get(key_of(3)));  // skipped: the back-off
  EXPECT_FALSE(tier->put(key_of(3), "x"));
  const auto took = std::chrono::steady_clock::now() - start;
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_LT(took, std::chrono::milliseconds(1000));
  EXPECT_NE(err.find("certificate verify failed"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  const Stats counters = tier->counters();
  EXPECT_EQ(counters.remote_errors, 1u);
  EXPECT_EQ(counters.remote_skipped, 2u);
  EXPECT_EQ(tls_->server().command({"EXISTS", RedisBackend::redis_key(key_of(3))})->value, "0");
}

TEST_F(TlsTierTest, AServerWhoseCertificateNamesAnotherHostIsRefused) {
  auto tier = open_remote_tier(config(tls_->ca_file(), "127.0.0.2"));
  ASSERT_NE(tier, nullptr);
  ::testing::internal::CaptureStderr();
  auto got = tier->get(key_of(6));
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find("mismatch"), std::string::npos) << got.error().message;
  EXPECT_EQ(tier->counters().remote_errors, 1u);
}

TEST_F(TlsTierTest, AnUnusableCaFileIsAWarningAndNoRemote) {
  ::testing::internal::CaptureStderr();
  auto tier = open_remote_tier(config("/nonexistent/ca.pem"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(tier, nullptr);
  EXPECT_NE(err.find("CUBBY_REMOTE_CA_FILE"), std::string::npos) << err;
  auto key_alone = TlsContext::create({"", "", tls_->client_key()});
  ASSERT_FALSE(key_alone);
  EXPECT_NE(key_alone.error().message.find("CUBBY_REMOTE_CERT_FILE"), std::string::npos);
}

TEST_F(TlsTierTest, AClientCertificateIsShownToAServerThatRequiresOne) {
  const std::string dir = std::filesystem::path(tls_->ca_file()).parent_path().string();
  const int port = RedisServer::free_port();
  std::string why;
  auto strict = RedisServer::start(
      &why,
      {"--tls-port", std::to_string(port), "--tls-cert-file", dir + "/server.crt", "--tls-key-file",
       dir + "/server.key", "--tls-ca-cert-file", tls_->ca_file(), "--tls-auth-clients", "yes"});
  ASSERT_NE(strict, nullptr) << why;
  Config c = config(tls_->ca_file());
  c.remote_url = "rediss://127.0.0.1:" + std::to_string(port);
  {
    auto anonymous = open_remote_tier(c);
    ASSERT_NE(anonymous, nullptr);
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(anonymous->get(key_of(4)));
    ::testing::internal::GetCapturedStderr();
  }
  c.remote_cert_file = tls_->client_cert();
  c.remote_key_file = tls_->client_key();
  auto tier = open_remote_tier(c);
  ASSERT_NE(tier, nullptr);
  round_trip(*tier, 4);
}

TEST_F(TlsTierTest, AValueOfManyTlsRecordsRoundTrips) {
  // 1 MB: 64 records of 16 KB, read ahead several at a time (tls_context.cpp).
  auto tier = open_remote_tier(config(tls_->ca_file()));
  ASSERT_NE(tier, nullptr);
  std::string value(1 << 20, '\0');
  for (std::size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 7919 % 251);
  ASSERT_TRUE(tier->put(key_of(9), value));
  auto got = tier->get(key_of(9));
  ASSERT_TRUE(got && got->has_value()) << (got ? "missing" : got.error().message);
  EXPECT_EQ(**got, value);
}

// A reconnect to a server this context has spoken to resumes its session (no certificate sent or
// checked again); another context, or another server, makes a full handshake.
TEST_F(TlsTierTest, AReconnectResumesTheSessionOfItsServer) {
  TlsSettings settings;
  settings.ca_file = tls_->ca_file();
  auto context = TlsContext::create(settings);
  ASSERT_TRUE(context) << context.error().message;
  const Endpoint endpoint{"127.0.0.1", tls_->tls_port(), ""};
  // Opens a connection, makes one round trip (which brings the server's session tickets), and
  // says whether it resumed.
  const auto connect_once = [&](const TlsContext& tls, const Endpoint& to) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    bool timed_out = false;
    auto opened = Connection::open(to, &tls, deadline, nullptr, timed_out);
    EXPECT_TRUE(opened) << opened.error().message;
    if (!opened) return false;
    Connection& connection = **opened;
    EXPECT_TRUE(connection.send("PING\r\n", deadline)) << connection.error();
    char reply[16];
    EXPECT_GT(connection.receive(reply, sizeof reply, deadline), 0u) << connection.error();
    return connection.resumed();
  };
  EXPECT_FALSE(connect_once(**context, endpoint));  // the first: a full handshake
  EXPECT_TRUE(connect_once(**context, endpoint));
  EXPECT_TRUE(connect_once(**context, endpoint));
  auto other = TlsContext::create(settings);  // another process's, say
  ASSERT_TRUE(other);
  EXPECT_FALSE(connect_once(**other, endpoint));
  // The same server by another name is another peer: its session is not offered there.
  EXPECT_FALSE(connect_once(**context, Endpoint{"localhost", tls_->tls_port(), ""}));
}

// A Redis value is framed by its length: a stream that ends inside it, without close_notify or
// with it, is an I/O error counted as one, never a shorter value.
TEST_F(TlsTierTest, AValueCutShortByTheEndOfTheStreamIsAnErrorNotAValue) {
  for (const auto end :
       {testing::TlsFake::End::no_close_notify, testing::TlsFake::End::close_notify}) {
    testing::TlsFake server(tls_->cert_dir() + "/server.crt", tls_->cert_dir() + "/server.key",
                            [&](testing::TlsFake::Peer& peer) {
                              if (!peer.receive()) return;  // the GET
                              peer.send("$100\r\nthe first half");
                              std::this_thread::sleep_for(std::chrono::milliseconds(50));
                              peer.end_with(end);
                            });
    Config c = config(tls_->ca_file());
    c.remote_url = "rediss://127.0.0.1:" + std::to_string(server.port());
    auto tier = open_remote_tier(c);
    ASSERT_NE(tier, nullptr);
    ::testing::internal::CaptureStderr();
    auto got = tier->get(key_of(7));
    ::testing::internal::GetCapturedStderr();
    ASSERT_FALSE(got) << (got->has_value() ? **got : "a miss");
    EXPECT_EQ(got.error().code, Errc::io);
    EXPECT_EQ(tier->counters().remote_errors, 1u);
  }
}

TEST(TlsContextSettings, ReadsAheadAndOffersAes128GcmFirst) {
  // The per-lookup cost of TLS (BM_RemoteGet/.../rediss): one recv for many records, and the
  // cheapest cipher with AES-NI first.
  auto context = TlsContext::create({});
  ASSERT_TRUE(context) << context.error().message;
  EXPECT_EQ(SSL_CTX_get_read_ahead((*context)->get()), 1);
  SSL* ssl = SSL_new((*context)->get());
  ASSERT_NE(ssl, nullptr);
  const char* first = SSL_get_cipher_list(ssl, 0);
  EXPECT_STREQ(first, "TLS_AES_128_GCM_SHA256");
  SSL_free(ssl);
}

TEST(TlsHandshake, AServerThatNeverAnswersTheHandshakeFailsTheCallByItsDeadline) {
  // A TCP server that accepts and reads, and never speaks TLS.
  testing::DripServer silent({}, std::chrono::milliseconds(10));
  RedisOptions o;
  o.url = parse_redis_url("rediss://127.0.0.1:" + std::to_string(silent.port())).value_or_throw();
  o.location = "rediss://127.0.0.1:" + std::to_string(silent.port());
  o.timeout = std::chrono::milliseconds(250);
  const auto tier = open_redis_remote(o);
  ASSERT_NE(tier, nullptr);
  Result<std::optional<std::string>> got = std::optional<std::string>();
  const auto took = testing::duration_of(silent, [&] { got = tier->get(key_of(5)); });
  EXPECT_FALSE(got);
  EXPECT_LT(took, 5 * o.timeout);
  EXPECT_EQ(tier->counters().remote_timeouts, 1u);
}

}  // namespace
}  // namespace cubby
