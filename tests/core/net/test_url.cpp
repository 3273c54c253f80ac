// The one URL parser of remote servers (core/src/net/url.cpp): the parts every scheme reads, the
// user information percent-decoded with bad escapes refused, one or several hosts, and errors that
// never quote the URL. The Redis and HTTP readings: test_redis_url.cpp, test_http.cpp.
#include <gtest/gtest.h>

#include "net/url.hpp"

namespace cubby {
namespace {

TEST(Url, TheGenericPartsAsWritten) {
  auto url = parse_url("https://ci:p%40ss:w@cache.example:8443/team/main/?q=1#top");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_EQ(url->scheme, "https");
  EXPECT_TRUE(url->has_user_info);
  EXPECT_TRUE(url->has_password);
  EXPECT_EQ(url->user, "ci");
  EXPECT_EQ(url->password, "p@ss:w");  // the first ':' ends the user
  ASSERT_EQ(url->hosts.size(), 1u);
  EXPECT_EQ(url->hosts[0].host, "cache.example");
  EXPECT_EQ(url->hosts[0].port, 8443);
  EXPECT_EQ(url->hosts[0].spelled, "cache.example:8443");
  EXPECT_EQ(url->path, "/team/main/");
  EXPECT_EQ(url->query, "q=1");
  EXPECT_EQ(url->fragment, "top");
}

TEST(Url, WhatIsAbsentIsSaidSo) {
  auto url = parse_url("redis://host");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_FALSE(url->has_user_info);
  EXPECT_FALSE(url->hosts[0].port);
  EXPECT_EQ(url->path, "");
  EXPECT_FALSE(url->query);
  EXPECT_FALSE(url->fragment);
  auto empty_query = parse_url("redis://host?");
  ASSERT_TRUE(empty_query);
  EXPECT_EQ(empty_query->query, "");  // present, and empty
  auto no_host = parse_url("unix://robot:pw@/run/r.sock?db=2");
  ASSERT_TRUE(no_host) << no_host.error().message;
  EXPECT_TRUE(no_host->hosts.empty());
  EXPECT_EQ(no_host->user, "robot");
  EXPECT_EQ(no_host->path, "/run/r.sock");
  auto user_only = parse_url("http://robot@h/x");
  ASSERT_TRUE(user_only);
  EXPECT_FALSE(user_only->has_password);
  EXPECT_EQ(user_only->user, "robot");
}

TEST(Url, SeveralHostsIpv6InBracketsAndEmptyPorts) {
  auto url = parse_url("redis://a.example:7000,10.0.0.2,[::1]:7002,[fe80::1]/");
  ASSERT_TRUE(url) << url.error().message;
  ASSERT_EQ(url->hosts.size(), 4u);
  EXPECT_EQ(url->hosts[1].host, "10.0.0.2");
  EXPECT_FALSE(url->hosts[1].port);
  EXPECT_EQ(url->hosts[2].host, "::1");
  EXPECT_EQ(url->hosts[2].spelled, "[::1]:7002");
  EXPECT_EQ(url->hosts[3].spelled, "[fe80::1]");
  auto empty_port = parse_url("http://cache.example:/x");
  ASSERT_TRUE(empty_port);
  EXPECT_FALSE(empty_port->hosts[0].port);
  EXPECT_EQ(empty_port->hosts[0].spelled, "cache.example");
}

TEST(Url, TheLastAtOfTheAuthorityEndsTheUserInformation) {
  auto url = parse_url("http://u:p@ss@h/team@x");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_EQ(url->password, "p@ss");
  EXPECT_EQ(url->hosts[0].host, "h");
  EXPECT_EQ(url->path, "/team@x");  // an '@' in the path is the path's
}

TEST(Url, ABadPercentEscapeInTheUserInformationIsRefused) {
  for (const char* bad :
       {"redis://:p%zz@h", "redis://:p%4@h", "redis://:p%@h", "http://u%g1:p@h"}) {
    auto url = parse_url(bad);
    ASSERT_FALSE(url) << bad;
    EXPECT_EQ(url.error().code, Errc::invalid_argument);
    EXPECT_NE(url.error().message.find("%-escape"), std::string::npos) << url.error().message;
    EXPECT_NE(url.error().message.find("%25"), std::string::npos) << url.error().message;
  }
  auto escaped = parse_url("redis://:100%25%2F%3f@h");
  ASSERT_TRUE(escaped) << escaped.error().message;
  EXPECT_EQ(escaped->password, "100%/?");
}

TEST(Url, MalformedUrlsAreRefusedWithoutQuotingThem) {
  for (const char* bad :
       {"hunter2", "://hunter2@h", "1x://h", "redis://h:0", "redis://h:65536", "redis://h:123456",
        "redis://h:8o", "redis://[::1", "redis://[::1]8080", "redis://a]b", "redis://[]",
        "redis://a,", "redis://a,,b", "redis://:hunter2@:1", "redis://h/a b", "redis://h/\x01"}) {
    auto url = parse_url(bad);
    ASSERT_FALSE(url) << bad;
    EXPECT_EQ(url.error().code, Errc::invalid_argument) << bad;
    EXPECT_EQ(url.error().message.find("hunter2"), std::string::npos) << url.error().message;
  }
}

// A password with an unencoded '/', '?' or '#' cuts the authority short: the error says how to
// write it.
TEST(Url, AnAtPastTheAuthoritySaysHowToEncodeAPassword) {
  for (const char* bad :
       {"redis://:hun/ter2@host", "redis://:hun?ter2@host", "redis://:hun#ter2@host"}) {
    auto url = parse_url(bad);
    ASSERT_FALSE(url) << bad;
    EXPECT_NE(url.error().message.find("%2F"), std::string::npos) << url.error().message;
    EXPECT_EQ(url.error().message.find("ter2"), std::string::npos) << url.error().message;
  }
}

}  // namespace
}  // namespace cubby
