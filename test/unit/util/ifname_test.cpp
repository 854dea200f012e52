// Unit tests for the one interface-name rule (util/ifname.h), with every case the CNI dispatcher,
// the selection parser, the cache keys, the netlink layer and the firewall chain names rely on.
#include <catch2/catch.hpp>

#include <string_view>

#include "util/ifname.h"

using manifold::util::is_valid_ifname;

TEST_CASE("interface names: 1-15 letters, digits, underscores, dots or dashes", "[util]") {
  for (const char* good : {"eth0", "net1", "a", "net1.100", "net1.100_a-b", "A_b-c.D", "veth-1.100", "ABC_def", "a_b-c",
                           "123456789012345", "abcdefghijklmno"}) {
    INFO(good);
    CHECK(is_valid_ifname(good));
  }
  for (const char* bad : {"",
                          ".",
                          "..",
                          "abcdefghijklmnop",
                          "1234567890123456",
                          "a b",
                          "net 1",
                          "eth 0",
                          "a/b",
                          "eth/0",
                          "net/1",
                          "eth0/1",
                          "eth0:1",
                          "eth:0",
                          "eth\n0",
                          "eth0\n",
                          "eth0;rm",
                          "\xc3\xa9th0",
                          "a@b",
                          "net1+",
                          "eth0 -d 10.0.0.50" /* match injection */}) {
    INFO(bad);
    CHECK_FALSE(is_valid_ifname(bad));
  }
  CHECK_FALSE(is_valid_ifname(std::string_view("eth\0", 4)));
  CHECK_FALSE(is_valid_ifname(std::string_view("ne\0t", 4)));
}
