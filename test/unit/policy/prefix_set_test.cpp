// Unit tests for ipBlock prefix arithmetic: a CIDR minus its except prefixes, both families.
#include <catch2/catch.hpp>

#include "policy/prefix_set.h"

using namespace manifold;
using namespace manifold::policy;

namespace {

std::vector<std::string> minus(const char* cidr, std::vector<const char*> except) {
  std::vector<util::IpPrefix> cut;
  for (const char* e : except) cut.push_back(*util::parse_cidr(e));
  std::vector<std::string> out;
  for (const util::IpPrefix& p : subtract_prefixes(*util::parse_cidr(cidr), cut)) out.push_back(p.str());
  return out;
}

}  // namespace

TEST_CASE("policy: a cidr without excepts is itself, masked", "[policy]") {
  CHECK(minus("10.1.2.3/8", {}) == std::vector<std::string>{"10.0.0.0/8"});
  CHECK(minus("0.0.0.0/0", {}) == std::vector<std::string>{"0.0.0.0/0"});
}

TEST_CASE("policy: one except splits along its path", "[policy]") {
  CHECK(minus("192.0.2.0/24", {"192.0.2.128/25"}) == std::vector<std::string>{"192.0.2.0/25"});
  CHECK(minus("192.0.2.0/24", {"192.0.2.64/26"}) == std::vector<std::string>{"192.0.2.0/26", "192.0.2.128/25"});
  CHECK(minus("10.0.0.0/8", {"10.1.2.0/24"}).size() == 16);
  CHECK(minus("192.0.2.0/30", {"192.0.2.1/32"}) == std::vector<std::string>{"192.0.2.0/32", "192.0.2.2/31"});
}

TEST_CASE("policy: several excepts, overlapping and covering", "[policy]") {
  CHECK(minus("192.0.2.0/24", {"192.0.2.0/25", "192.0.2.128/25"}).empty());
  CHECK(minus("192.0.2.0/24", {"192.0.2.0/26", "192.0.2.0/25"}) == std::vector<std::string>{"192.0.2.128/25"});
  CHECK(minus("192.0.2.0/24", {"192.0.2.0/25", "192.0.2.0/26"}) == std::vector<std::string>{"192.0.2.128/25"});
  CHECK(minus("192.0.2.0/24", {"192.0.2.0/26", "192.0.2.192/26"}) ==
        std::vector<std::string>{"192.0.2.64/26", "192.0.2.128/26"});
  CHECK(minus("192.0.2.0/24", {"198.51.100.0/25"}) == std::vector<std::string>{"192.0.2.0/24"});  // outside
  CHECK(minus("192.0.2.0/24", {"2001:db8::/64"}) == std::vector<std::string>{"192.0.2.0/24"});    // other family
}

TEST_CASE("policy: IPv6 prefixes split the same way", "[policy]") {
  CHECK(minus("2001:db8::/32", {"2001:db8:8000::/33"}) == std::vector<std::string>{"2001:db8::/33"});
  CHECK(minus("2001:db8::/126", {"2001:db8::3/128"}) == std::vector<std::string>{"2001:db8::/127", "2001:db8::2/128"});
  CHECK(minus("::/0", {"2001:db8::/32"}).size() == 32);
}
