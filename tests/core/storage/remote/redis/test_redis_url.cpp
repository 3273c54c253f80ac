// CUBBY_REMOTE URL parsing and redaction (core/src/storage/remote/redis/redis_url.cpp).
#include <gtest/gtest.h>

#include "storage/remote/redis/redis_url.hpp"

namespace cubby {
namespace {

TEST(RedisUrl, HostPortAndDb) {
  auto url = parse_redis_url("redis://cache.example.com:6380/3");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_EQ(url->host, "cache.example.com");
  EXPECT_EQ(url->port, 6380);
  EXPECT_EQ(url->db, 3);
  EXPECT_TRUE(url->user.empty());
  EXPECT_TRUE(url->password.empty());
}

TEST(RedisUrl, DefaultsAndIpv6) {
  auto url = parse_redis_url("redis://10.0.0.7");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->port, 6379);
  EXPECT_EQ(url->db, 0);
  auto v6 = parse_redis_url("redis://[::1]:7000/");
  ASSERT_TRUE(v6) << v6.error().message;
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 7000);
}

TEST(RedisUrl, SeveralNodesAreTheSeedsOfACluster) {
  auto url = parse_redis_url("rediss://ci:p%2Cw@a.example:7000,10.0.0.2,[::1]:7002");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_TRUE(url->tls);
  EXPECT_EQ(url->user, "ci");
  EXPECT_EQ(url->password, "p,w");
  EXPECT_EQ(url->host, "a.example");
  EXPECT_EQ(url->port, 7000);
  ASSERT_EQ(url->more_seeds.size(), 2u);
  EXPECT_EQ(url->more_seeds[0].host, "10.0.0.2");
  EXPECT_EQ(url->more_seeds[0].port, 6379);
  EXPECT_EQ(url->more_seeds[1].host, "::1");
  EXPECT_EQ(url->more_seeds[1].port, 7002);
  EXPECT_TRUE(parse_redis_url("redis://a:7000")->more_seeds.empty());
  EXPECT_FALSE(parse_redis_url("redis://a:7000,/"));         // an empty node
  EXPECT_FALSE(parse_redis_url("redis://a:7000,b:70000"));   // a bad port
  EXPECT_FALSE(parse_redis_url("redis://a:7000,b:7001/2"));  // a cluster has database 0 only
  EXPECT_EQ(redact_redis_url("redis://u:secret@a:7000,b:7001"), "redis://***@a:7000,b:7001");
  EXPECT_EQ(redact_redis_url("redis://a:7000,b:secret%zz"), "redis://***");
}

TEST(RedisUrl, UserAndPasswordPercentDecoded) {
  auto url = parse_redis_url("redis://ci-reader:p%40ss:word@host:1/2");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_EQ(url->user, "ci-reader");
  EXPECT_EQ(url->password, "p@ss:word");
  EXPECT_EQ(url->host, "host");
  auto password_only = parse_redis_url("redis://:hunter2@host");
  ASSERT_TRUE(password_only);
  EXPECT_TRUE(password_only->user.empty());
  EXPECT_EQ(password_only->password, "hunter2");
}

TEST(RedisUrl, MalformedUrlsFailWithoutTheirPassword) {
  for (const char* bad :
       {"http://host", "redis://", "redis://:pw@", "redis://host:0", "unix://", "unix://relative",
        "unix:///s?password=pw", "redis+unix://:pw@", "rediss://:pw@", "redis://host:99999",
        "redis://host:12ab", "redis://host/x", "redis://[::1"}) {
    auto url = parse_redis_url(bad);
    EXPECT_FALSE(url) << bad;
    if (!url) {
      EXPECT_EQ(url.error().code, Errc::invalid_argument);
      EXPECT_EQ(url.error().message.find("pw"), std::string::npos) << url.error().message;
    }
  }
}

// A '%' not followed by two hex digits is a mistake in the URL, not part of the password: refused
// with a message that says how to write a '%' (as an HTTP URL's is).
TEST(RedisUrl, ABadPercentEscapeInTheUserOrPasswordIsAClearError) {
  for (const char* bad : {"redis://:hunter2%zz@host", "rediss://ci%g:hunter2@host:6380",
                          "redis://:hunter2%4@a:7000,b:7001", "unix://:hunter2%@/tmp/r.sock"}) {
    auto url = parse_redis_url(bad);
    ASSERT_FALSE(url) << bad << " parsed, password " << url->password;
    EXPECT_EQ(url.error().code, Errc::invalid_argument);
    EXPECT_NE(url.error().message.find("%-escape"), std::string::npos) << url.error().message;
    EXPECT_NE(url.error().message.find("%25"), std::string::npos) << url.error().message;
    EXPECT_EQ(url.error().message.find("hunter2"), std::string::npos) << url.error().message;
  }
  auto percent = parse_redis_url("redis://:100%25@host");
  ASSERT_TRUE(percent) << percent.error().message;
  EXPECT_EQ(percent->password, "100%");
}

TEST(RedisUrl, TlsAndUnixSocketForms) {
  auto tls = parse_redis_url("rediss://ci:p%40ss@cache.example.com:6380/2");
  ASSERT_TRUE(tls) << tls.error().message;
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->user, "ci");
  EXPECT_EQ(tls->password, "p@ss");
  EXPECT_EQ(tls->host, "cache.example.com");
  EXPECT_EQ(tls->port, 6380);
  EXPECT_EQ(tls->db, 2);
  EXPECT_FALSE(parse_redis_url("redis://host")->tls);
  for (const char* scheme : {"unix://", "redis+unix://"}) {
    auto plain = parse_redis_url(std::string(scheme) + "/run/redis/redis.sock");
    ASSERT_TRUE(plain) << plain.error().message;
    EXPECT_EQ(plain->unix_path, "/run/redis/redis.sock");
    EXPECT_FALSE(plain->tls);
    EXPECT_EQ(plain->db, 0);
    auto full = parse_redis_url(std::string(scheme) + "ci:hunter2@/tmp/r.sock?db=3");
    ASSERT_TRUE(full) << full.error().message;
    EXPECT_EQ(full->unix_path, "/tmp/r.sock");
    EXPECT_EQ(full->user, "ci");
    EXPECT_EQ(full->password, "hunter2");
    EXPECT_EQ(full->db, 3);
  }
  EXPECT_EQ(redact_redis_url("rediss://ci:hunter2@host:6380/1"), "rediss://***@host:6380/1");
  EXPECT_EQ(redact_redis_url("unix://ci:hunter2@/tmp/r.sock?db=3"), "unix://***@/tmp/r.sock?db=3");
  EXPECT_EQ(redact_redis_url("redis+unix:///tmp/r.sock"), "redis+unix:///tmp/r.sock");
  for (const char* url : {"unix:///tmp/r.sock?password=hunter2", "unix:///tmp/hunter2 x",
                          "unix://hunter2@/s", "redis+unix:///s#hunter2"}) {
    EXPECT_EQ(redact_redis_url(url).find("hunter2"), std::string::npos) << url;
  }
}

TEST(RedisUrl, RedactionHidesCredentials) {
  EXPECT_EQ(redact_redis_url("redis://reader:hunter2@host:6379/1"), "redis://***@host:6379/1");
  EXPECT_EQ(redact_redis_url("redis://host:6379"), "redis://host:6379");
  EXPECT_EQ(redact_redis_url("redis://[::1]:7000/"), "redis://[::1]:7000/");
  EXPECT_EQ(redact_redis_url("https://user:hunter2@host").find("hunter2"), std::string::npos);
}

TEST(RedisUrl, RedactionHidesEveryQueryValueAndAnythingElseThatMayBeASecret) {
  // Unsupported forms are printed in warnings: whatever they hold, the secret is not shown.
  EXPECT_EQ(redact_redis_url("redis://host:6379/0?password=hunter2"),
            "redis://host:6379/0?password=***");
  EXPECT_EQ(redact_redis_url("redis://host?user=u&password=hunter2&&hunter2&x="),
            "redis://host?user=***&password=***&&***&x=***");
  EXPECT_EQ(redact_redis_url("redis://u:p@host/0?password=hunter2#hunter2"),
            "redis://***@host/0?password=***#***");
  EXPECT_EQ(redact_redis_url("redis://host/hunter2"), "redis://host/***");
  EXPECT_EQ(redact_redis_url("redis://host;password=hunter2/0"), "redis://***/0");
  for (const char* url :
       {"redis://host:6379/0?password=hunter2", "redis://host?hunter2", "redis://host#hunter2",
        "redis://host/0?a=1&password=hunter2", "redis://host/0?pass@word=hunter2",
        "redis://hunter2:@host", "redis://host:hunter2"}) {
    EXPECT_EQ(redact_redis_url(url).find("hunter2"), std::string::npos) << url;
  }
}

TEST(RedisUrl, QueryIsRefusedWithWhereThePasswordGoes) {
  for (const char* url :
       {"redis://host:6379/0?password=hunter2", "redis://host?db=1", "redis://host:6379#x"}) {
    auto parsed = parse_redis_url(url);
    ASSERT_FALSE(parsed) << url;
    EXPECT_NE(parsed.error().message.find("redis://[user]:password@host"), std::string::npos)
        << parsed.error().message;
    EXPECT_EQ(parsed.error().message.find("hunter2"), std::string::npos);
  }
}

}  // namespace
}  // namespace cubby
