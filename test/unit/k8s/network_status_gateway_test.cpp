// Tests of installed_default_gateways: which gateways the network-status `gateway` key lists for a
// delegate's result (a default route's own gw, else the gateway of an address of its family, else
// nothing for a device route), per family, canonical and without duplicates.
#include <catch2/catch.hpp>

#include "k8s/network_status.h"

using namespace manifold::k8s;

TEST_CASE("network-status gateways: a default route's own gateway", "[k8s]") {
  std::vector<StatusRoute> routes = {{"0.0.0.0/0", "192.0.2.1"}, {"100.64.0.0/16", "192.0.2.9"}};
  CHECK(installed_default_gateways(routes, {}) == std::vector<std::string>{"192.0.2.1"});
}

TEST_CASE("network-status gateways: a default route without gw goes through the address's gateway", "[k8s]") {
  std::vector<StatusIp> ips = {{"2001:db8::5/64", 0, "2001:db8:0::1"}, {"192.0.2.2/24", 0, "192.0.2.1"}};
  CHECK(installed_default_gateways({{"0.0.0.0/0", ""}}, ips) == std::vector<std::string>{"192.0.2.1"});
  CHECK(installed_default_gateways({{"::/0", ""}}, ips) == std::vector<std::string>{"2001:db8::1"});
  CHECK(installed_default_gateways({{"::0/0", ""}, {"0.0.0.0/0", ""}}, ips) ==
        std::vector<std::string>{"2001:db8::1", "192.0.2.1"});
}

TEST_CASE("network-status gateways: device routes and no default route list nothing", "[k8s]") {
  std::vector<StatusIp> no_gateway = {{"192.0.2.2/24", 0, ""}};
  CHECK(installed_default_gateways({{"0.0.0.0/0", ""}}, no_gateway).empty());
  CHECK(installed_default_gateways({{"192.0.2.0/24", ""}}, {{"192.0.2.2/24", 0, "192.0.2.1"}}).empty());
  CHECK(installed_default_gateways({}, {{"192.0.2.2/24", 0, "192.0.2.1"}}).empty());
  // An IPv6 gateway never serves an IPv4 default route.
  CHECK(installed_default_gateways({{"0.0.0.0/0", ""}}, {{"2001:db8::5/64", 0, "2001:db8::1"}}).empty());
}

TEST_CASE("network-status gateways: canonical text, no duplicates, garbage ignored", "[k8s]") {
  std::vector<StatusRoute> routes = {{"0.0.0.0/0", "192.0.2.1"},  {"0.0.0.0/0", ""},
                                     {"::/0", "2001:DB8:0:0::1"}, {"::/0", "2001:db8::1"},
                                     {"0.0.0.0/0", "not-an-ip"},  {"garbage", "192.0.2.7"}};
  std::vector<StatusIp> ips = {{"192.0.2.2/24", 0, "192.0.2.1"}};
  CHECK(installed_default_gateways(routes, ips) == std::vector<std::string>{"192.0.2.1", "2001:db8::1"});
}
