// Unit tests for lib/netlink/family (the kernel's address families next to util::IpAddress's IP
// version) and the kernel-bytes conversion of lib/netlink/convert.
#include "netlink/family.h"

#include <sys/socket.h>

#include <catch2/catch.hpp>

#include "netlink/convert.h"

using manifold::netlink::family_name;
using manifold::netlink::family_of;
using manifold::netlink::is_ip_family;
using manifold::netlink::detail::prefix_from_bytes;
using manifold::util::parse_ip;

TEST_CASE("prefix_from_bytes validates family and sizes", "[netlink]") {
  const unsigned char v4[4] = {198, 51, 100, 7};
  CHECK(prefix_from_bytes(AF_INET, v4, 4, 24)->str() == "198.51.100.7/24");
  CHECK(prefix_from_bytes(AF_INET, nullptr, 0, 0)->str() == "0.0.0.0/0");
  CHECK(prefix_from_bytes(AF_INET6, nullptr, 0, 0)->str() == "::/0");
  CHECK_FALSE(prefix_from_bytes(AF_INET, v4, 3, 24));
  CHECK_FALSE(prefix_from_bytes(AF_INET, v4, 4, 33));
  CHECK_FALSE(prefix_from_bytes(AF_PACKET, v4, 4, 8));
  CHECK_FALSE(prefix_from_bytes(AF_INET6, v4, 4, 8));
  CHECK(family_name(AF_INET) == "IPv4");
  CHECK(family_name(AF_INET6) == "IPv6");
  CHECK(family_name(17) == "family 17");
}

TEST_CASE("address families map to and from IP versions", "[netlink]") {
  CHECK(family_of(*parse_ip("192.0.2.1")) == AF_INET);
  CHECK(family_of(*parse_ip("2001:db8::1")) == AF_INET6);
  CHECK(is_ip_family(AF_INET));
  CHECK(is_ip_family(AF_INET6));
  CHECK_FALSE(is_ip_family(AF_UNSPEC));
  CHECK_FALSE(is_ip_family(AF_PACKET));
}
