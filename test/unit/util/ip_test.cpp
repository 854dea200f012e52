// Unit tests for util/ip.h: address and CIDR parsing and rendering, masking and containment,
// default-route detection and MAC validation, including hostile input (empty, oversized, embedded
// NUL, zone IDs, out-of-range lengths).
#include "util/ip.h"

#include <catch2/catch.hpp>
#include <string>

using manifold::util::IpAddress;
using manifold::util::IpPrefix;
using manifold::util::is_default_route_dst;
using manifold::util::parse_cidr;
using manifold::util::parse_ip;
using manifold::util::parse_ip_or_cidr;
using manifold::util::valid_mac;

TEST_CASE("parse_ip accepts IPv4 and IPv6 and renders canonically", "[util]") {
  auto v4 = parse_ip("10.1.2.3");
  REQUIRE(v4);
  CHECK(v4->family == 4);
  CHECK(v4->bytes[0] == 10);
  CHECK(v4->bytes[3] == 3);
  CHECK(v4->bytes[4] == 0);
  CHECK(v4->str() == "10.1.2.3");

  auto v6 = parse_ip("2001:DB8:0:0:0:0:0:1");
  REQUIRE(v6);
  CHECK(v6->family == 6);
  CHECK(v6->bytes[0] == 0x20);
  CHECK(v6->bytes[15] == 1);
  CHECK(v6->str() == "2001:db8::1");

  auto mapped = parse_ip("::ffff:1.2.3.4");
  REQUIRE(mapped);
  CHECK(mapped->family == 6);
  CHECK(mapped->str() == "::ffff:1.2.3.4");

  CHECK(parse_ip("::")->is_unspecified());
  CHECK(parse_ip("0.0.0.0")->is_unspecified());
  CHECK_FALSE(parse_ip("0.0.0.1")->is_unspecified());
  CHECK(*parse_ip("2001:db8::1") == *parse_ip("2001:0db8:0::1"));
  CHECK_FALSE(*parse_ip("10.0.0.1") == *parse_ip("10.0.0.2"));
}

TEST_CASE("parse_ip rejects hostile and malformed input", "[util]") {
  const std::string with_nul("10.0.0.1\0garbage", 16);
  for (std::string bad :
       {std::string(), std::string(" 10.0.0.1"), std::string("10.0.0.1 "), std::string("10.0.0"),
        std::string("10.0.0.256"), std::string("010.0.0.1"), std::string("10.0.0.1/24"), std::string("fe80::1%eth0"),
        std::string("1:2:3:4:5:6:7:8:9"), std::string("::g"), std::string("hello"), std::string(1000, '1'),
        std::string(47, ':'), with_nul, std::string("\0", 1)}) {
    INFO("input: " << bad);
    CHECK_FALSE(parse_ip(bad));
  }
}

TEST_CASE("parse_cidr keeps host bits and renders network", "[util]") {
  auto p = parse_cidr("10.1.2.3/24");
  REQUIRE(p);
  CHECK(p->prefix_len == 24);
  CHECK(p->str() == "10.1.2.3/24");
  CHECK(p->network_str() == "10.1.2.0/24");

  auto p6 = parse_cidr("2001:DB8::abcd:1/64");
  REQUIRE(p6);
  CHECK(p6->str() == "2001:db8::abcd:1/64");
  CHECK(p6->network_str() == "2001:db8::/64");

  CHECK(parse_cidr("10.1.2.3/23")->network_str() == "10.1.2.0/23");
  CHECK(parse_cidr("10.1.3.255/23")->network_str() == "10.1.2.0/23");
  CHECK(parse_cidr("10.1.2.3/32")->network_str() == "10.1.2.3/32");
  CHECK(parse_cidr("10.1.2.3/0")->network_str() == "0.0.0.0/0");
  CHECK(parse_cidr("2001:db8::1/128")->network_str() == "2001:db8::1/128");
  CHECK(parse_cidr("2001:db8::1/0")->network_str() == "::/0");
  CHECK(parse_cidr("ffff::ffff/127")->network_str() == "ffff::fffe/127");
}

TEST_CASE("parse_cidr rejects bad prefixes and hostile input", "[util]") {
  const std::string with_nul = std::string("10.0.0.1/2") + '\0' + "4";
  for (std::string bad :
       {std::string(), std::string("/"), std::string("10.0.0.1"), std::string("10.0.0.1/"), std::string("/24"),
        std::string("1.2.3.4/33"), std::string("::1/129"), std::string("1.2.3.4/-1"), std::string("1.2.3.4/+8"),
        std::string("1.2.3.4/08"), std::string("1.2.3.4/1000"), std::string("1.2.3.4/24/24"),
        std::string("1.2.3.4/ 24"), std::string("1.2.3.4/24 "), std::string("1.2.3.4/2a"),
        std::string("fe80::1%eth0/64"), std::string(5000, '9') + "/8", with_nul}) {
    INFO("input: " << bad);
    CHECK_FALSE(parse_cidr(bad));
  }
  CHECK(parse_cidr("0.0.0.0/0"));
  CHECK(parse_cidr("::/128"));
}

TEST_CASE("is_default_route_dst", "[util]") {
  CHECK(is_default_route_dst("0.0.0.0/0"));
  CHECK(is_default_route_dst("::/0"));
  CHECK(is_default_route_dst("::0/0"));
  CHECK(is_default_route_dst("0:0:0:0:0:0:0:0/0"));
  CHECK_FALSE(is_default_route_dst("0.0.0.0/1"));
  CHECK_FALSE(is_default_route_dst("0.0.0.0/8"));
  CHECK_FALSE(is_default_route_dst("10.0.0.0/0"));
  CHECK_FALSE(is_default_route_dst("::/1"));
  CHECK_FALSE(is_default_route_dst("0.0.0.0"));
  CHECK_FALSE(is_default_route_dst(""));
  CHECK_FALSE(is_default_route_dst("default"));
  CHECK_FALSE(is_default_route_dst(std::string("0.0.0.0/0\0", 10)));
}

TEST_CASE("valid_mac accepts what Go's net.ParseMAC accepts", "[util]") {
  CHECK(valid_mac("00:00:5e:00:53:01"));
  CHECK(valid_mac("0A:1b:2C:3d:4E:5f"));
  CHECK(valid_mac("00-00-5e-00-53-01"));
  CHECK(valid_mac("0000.5e00.5301"));
  CHECK(valid_mac("02:00:5e:10:00:00:00:01"));  // EUI-64
  CHECK(valid_mac("0200.5e10.0000.0001"));
  CHECK(valid_mac("00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01"));  // IPoIB
  CHECK(valid_mac("00-00-00-00-fe-80-00-00-00-00-00-00-02-00-5e-10-00-00-00-01"));
  CHECK(valid_mac("0000.0000.fe80.0000.0000.0000.0200.5e10.0000.0001"));
}

TEST_CASE("valid_mac rejects malformed and hostile input", "[util]") {
  for (std::string bad :
       {std::string(), std::string("00:00:5e:00:53"), std::string("00:00:5e:00:53:01:02"),
        std::string("00:00:5e:00:53:0g"), std::string("00:00-5e:00:53:01"), std::string("00:00:5e:00:53:01:"),
        std::string("000:0:5e:00:53:01"), std::string("00:00:5e:00:53:1"), std::string("0000.5e00.530"),
        std::string("0000.5e00:5301"), std::string("00005e005301"), std::string("00 00 5e 00 53 01"),
        std::string("00:00:5e:00:53:01:02:03:04:05"), std::string(4096, 'a'), std::string("00:00:5e:00:\0\0:01", 17)}) {
    INFO("input: " << bad);
    CHECK_FALSE(valid_mac(bad));
  }
}

TEST_CASE("parse_ip accepts IPv4 and IPv6 and prints them canonically", "[util]") {
  const auto v4 = parse_ip("192.0.2.5");
  REQUIRE(v4);
  CHECK(v4->family == 4);
  CHECK(v4->bits() == 32);
  CHECK(IpPrefix::host(*v4).str() == "192.0.2.5/32");
  CHECK(v4->family_name() == "IPv4");

  const auto v6 = parse_ip("2001:DB8:0:0::0:1");
  REQUIRE(v6);
  CHECK(v6->family == 6);
  CHECK(v6->bits() == 128);
  CHECK(v6->str() == "2001:db8::1");
  CHECK(v6->family_name() == "IPv6");

  const auto mapped = parse_ip("::ffff:192.0.2.1");
  REQUIRE(mapped);
  CHECK(mapped->family == 6);
}

TEST_CASE("parse_ip rejects garbage, zone IDs, prefixes and overlong input", "[util]") {
  for (const char* bad : {"", "192.0.2", "192.0.2.256", "192.0.2.1 ", " 192.0.2.1", "010.0.0.1", "fe80::1%eth0",
                          "1.2.3.4/24", "2001:db8::g", "hostname", "::1::2", "192.0.2.1\n"}) {
    INFO(bad);
    CHECK_FALSE(parse_ip(bad));
  }
  CHECK_FALSE(parse_ip(std::string(200, '1')));
  CHECK_FALSE(parse_ip(std::string("1.2.3.4\0", 8)));
}

TEST_CASE("parse_ip_or_cidr handles lengths strictly; a bare address is a host prefix", "[util]") {
  const auto p = parse_ip_or_cidr("10.1.2.3/16");
  REQUIRE(p);
  CHECK(p->prefix_len == 16);
  CHECK(p->str() == "10.1.2.3/16");
  CHECK(parse_ip_or_cidr("10.1.2.3")->prefix_len == 32);
  CHECK(parse_ip_or_cidr("2001:db8::5")->str() == "2001:db8::5/128");
  CHECK(parse_ip_or_cidr("2001:db8::/64")->str() == "2001:db8::/64");
  CHECK(parse_ip_or_cidr("0.0.0.0/0")->prefix_len == 0);
  CHECK_FALSE(parse_cidr("10.1.2.3"));  // parse_cidr wants the length
  for (const char* bad : {"10.0.0.0/33", "2001:db8::/129", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/08",
                          "10.0.0.0/8/8", "/8", "10.0.0.0/1000", "10.0.0.0/ 8", "", "garbage"}) {
    INFO(bad);
    CHECK_FALSE(parse_ip_or_cidr(bad));
  }
}

TEST_CASE("masking and containment", "[util]") {
  const IpPrefix p = *parse_cidr("192.0.2.77/26");
  CHECK_FALSE(p.is_masked());
  CHECK(p.masked().str() == "192.0.2.64/26");
  CHECK(p.masked().is_masked());
  CHECK(parse_cidr("2001:db8:1:2::5/60")->masked().str() == "2001:db8:1::/60");
  CHECK(parse_cidr("10.0.0.1/0")->masked().str() == "0.0.0.0/0");

  const IpPrefix net = *parse_cidr("192.0.2.0/24");
  CHECK(net.contains(*parse_ip("192.0.2.1")));
  CHECK(net.contains(*parse_cidr("192.0.2.128/25")));
  CHECK_FALSE(net.contains(*parse_ip("192.0.3.1")));
  CHECK_FALSE(net.contains(*parse_cidr("192.0.0.0/16")));  // shorter prefix is not inside
  CHECK_FALSE(net.contains(*parse_ip("2001:db8::1")));     // other family
  CHECK(parse_cidr("0.0.0.0/0")->contains(*parse_ip("203.0.113.9")));
  CHECK(parse_cidr("192.0.2.77/24")->contains(*parse_ip("192.0.2.1")));  // host bits ignored
}

TEST_CASE("IPv6 link-local addresses are recognised", "[util]") {
  CHECK(parse_ip("fe80::1")->is_ipv6_link_local());
  CHECK(parse_ip("febf:ffff::1")->is_ipv6_link_local());
  CHECK_FALSE(parse_ip("fec0::1")->is_ipv6_link_local());
  CHECK_FALSE(parse_ip("2001:db8::1")->is_ipv6_link_local());
  CHECK_FALSE(parse_ip("254.128.0.1")->is_ipv6_link_local());  // same bytes, IPv4
}
