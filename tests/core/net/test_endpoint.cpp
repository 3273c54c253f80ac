// Endpoint (core/src/net/endpoint.cpp): the name that messages and per-server state use.
#include <gtest/gtest.h>

#include "net/endpoint.hpp"

namespace cubby {
namespace {

TEST(Endpoint, ANameIsHostAndPortWithAnIpv6AddressInBracketsOrTheSocketPath) {
  EXPECT_EQ((Endpoint{"cache.example", 6380, ""}.name()), "cache.example:6380");
  EXPECT_EQ((Endpoint{"10.0.0.2", 80, ""}.name()), "10.0.0.2:80");
  EXPECT_EQ((Endpoint{"::1", 7000, ""}.name()), "[::1]:7000");
  EXPECT_EQ((Endpoint{"", 0, "/run/redis.sock"}.name()), "/run/redis.sock");
}

TEST(Endpoint, EndpointsAreEqualWhenEveryPartIs) {
  EXPECT_EQ((Endpoint{"h", 1, ""}), (Endpoint{"h", 1, ""}));
  EXPECT_NE((Endpoint{"h", 1, ""}), (Endpoint{"h", 2, ""}));
  EXPECT_NE((Endpoint{"h", 1, ""}), (Endpoint{"h", 1, "/s"}));
}

}  // namespace
}  // namespace cubby
