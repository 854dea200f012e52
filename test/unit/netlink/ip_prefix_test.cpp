// Unit tests for lib/netlink/ip_prefix: strict parsing, canonical printing, masking, containment.
#include "netlink/ip_prefix.h"

#include <sys/socket.h>

#include <catch2/catch.hpp>

using manifold::netlink::family_name;
using manifold::netlink::IpPrefix;
using manifold::netlink::parse_cidr;
using manifold::netlink::parse_ip;
using manifold::netlink::prefix_from_bytes;

TEST_CASE("parse_ip accepts IPv4 and IPv6 and prints them canonically", "[netlink]") {
  const auto v4 = parse_ip("192.0.2.5");
  REQUIRE(v4);
  CHECK(v4->family == AF_INET);
  CHECK(v4->length == 32);
  CHECK(v4->to_string() == "192.0.2.5/32");

  const auto v6 = parse_ip("2001:DB8:0:0::0:1");
  REQUIRE(v6);
  CHECK(v6->family == AF_INET6);
  CHECK(v6->length == 128);
  CHECK(v6->address() == "2001:db8::1");

  const auto mapped = parse_ip("::ffff:192.0.2.1");
  REQUIRE(mapped);
  CHECK(mapped->family == AF_INET6);
}

TEST_CASE("parse_ip rejects garbage, zone IDs, prefixes and overlong input", "[netlink]") {
  for (const char* bad :
       {"", "192.0.2", "192.0.2.256", "192.0.2.1 ", " 192.0.2.1", "010.0.0.1", "fe80::1%eth0",
        "1.2.3.4/24", "2001:db8::g", "hostname", "::1::2", "192.0.2.1\n"}) {
    INFO(bad);
    CHECK_FALSE(parse_ip(bad));
  }
  CHECK_FALSE(parse_ip(std::string(200, '1')));
  CHECK_FALSE(parse_ip(std::string("1.2.3.4\0", 8)));
}

TEST_CASE("parse_cidr handles lengths strictly", "[netlink]") {
  const auto p = parse_cidr("10.1.2.3/16");
  REQUIRE(p);
  CHECK(p->length == 16);
  CHECK(p->to_string() == "10.1.2.3/16");
  CHECK(parse_cidr("10.1.2.3")->length == 32);
  CHECK(parse_cidr("2001:db8::/64")->to_string() == "2001:db8::/64");
  CHECK(parse_cidr("0.0.0.0/0")->length == 0);
  for (const char* bad :
       {"10.0.0.0/33", "2001:db8::/129", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/08",
        "10.0.0.0/8/8", "/8", "10.0.0.0/1000", "10.0.0.0/ 8"}) {
    INFO(bad);
    CHECK_FALSE(parse_cidr(bad));
  }
}

TEST_CASE("masking and containment", "[netlink]") {
  const IpPrefix p = *parse_cidr("192.0.2.77/26");
  CHECK_FALSE(p.is_masked());
  CHECK(p.masked().to_string() == "192.0.2.64/26");
  CHECK(p.masked().is_masked());
  CHECK(parse_cidr("2001:db8:1:2::5/60")->masked().to_string() == "2001:db8:1::/60");
  CHECK(parse_cidr("10.0.0.1/0")->masked().to_string() == "0.0.0.0/0");

  const IpPrefix net = *parse_cidr("192.0.2.0/24");
  CHECK(net.contains(*parse_ip("192.0.2.1")));
  CHECK(net.contains(*parse_cidr("192.0.2.128/25")));
  CHECK_FALSE(net.contains(*parse_ip("192.0.3.1")));
  CHECK_FALSE(net.contains(*parse_cidr("192.0.0.0/16")));  // shorter prefix is not inside
  CHECK_FALSE(net.contains(*parse_ip("2001:db8::1")));     // other family
  CHECK(parse_cidr("0.0.0.0/0")->contains(*parse_ip("203.0.113.9")));
}

TEST_CASE("prefix_from_bytes validates family and sizes", "[netlink]") {
  const unsigned char v4[4] = {198, 51, 100, 7};
  CHECK(prefix_from_bytes(AF_INET, v4, 4, 24)->to_string() == "198.51.100.7/24");
  CHECK(prefix_from_bytes(AF_INET, nullptr, 0, 0)->to_string() == "0.0.0.0/0");
  CHECK_FALSE(prefix_from_bytes(AF_INET, v4, 3, 24));
  CHECK_FALSE(prefix_from_bytes(AF_INET, v4, 4, 33));
  CHECK_FALSE(prefix_from_bytes(AF_PACKET, v4, 4, 8));
  CHECK_FALSE(prefix_from_bytes(AF_INET6, v4, 4, 8));
  CHECK(family_name(AF_INET) == "IPv4");
  CHECK(family_name(AF_INET6) == "IPv6");
  CHECK(family_name(17) == "family 17");
}
