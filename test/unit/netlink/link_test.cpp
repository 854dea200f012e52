// Unit tests for lib/netlink/link value helpers: interface-name validation and formatting.
#include "netlink/link.h"

#include <catch2/catch.hpp>

#include "cni/error.h"

using namespace manifold::netlink;

TEST_CASE("interface names are validated", "[netlink]") {
  for (const char* good : {"eth0", "net1", "a", "veth-1.100", "ABC_def", "123456789012345"}) {
    INFO(good);
    CHECK_NOTHROW(validate_ifname(good));
  }
  for (const char* bad :
       {"", ".", "..", "1234567890123456", "eth 0", "eth0/1", "eth:0", "eth0\n", "eth0;rm", "\xc3\xa9th0", "a@b"}) {
    INFO(bad);
    CHECK_THROWS_AS(validate_ifname(bad), manifold::cni::CniError);
  }
  CHECK_THROWS_AS(validate_ifname(std::string_view("eth\0", 4)), manifold::cni::CniError);
  try {
    validate_ifname("bad\x01name");
    FAIL("no exception");
  } catch (const manifold::cni::CniError& e) {
    CHECK(e.code() == 7);
    CHECK(e.msg().find("\"bad?name\"") != std::string::npos);  // control characters are not echoed
  }
}

TEST_CASE("link values format", "[netlink]") {
  const unsigned char mac[6] = {0x02, 0x42, 0xAC, 0x11, 0x00, 0x02};
  CHECK(format_mac(mac, 6) == "02:42:ac:11:00:02");
  CHECK(format_mac(mac, 0).empty());
  CHECK(format_mac(nullptr, 6).empty());

  const LinkInfo link{3, "net1", "02:42:ac:11:00:02", 1500, true, "veth"};
  CHECK(to_string(link) == "3: net1 (veth) mac 02:42:ac:11:00:02 mtu 1500 up");
  const LinkInfo lo{1, "lo", "", 65536, false, ""};
  CHECK(to_string(lo) == "1: lo mtu 65536 down");
}
