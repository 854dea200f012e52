// Unit tests for lib/netlink/net_ops: the free-table search, input validation in front of every
// implementation, and the default-route helpers (exercised through FakeNetOps).
#include "netlink/net_ops.h"

#include <sys/socket.h>

#include <catch2/catch.hpp>

#include "cni/error.h"
#include "netlink/fake_net_ops.h"
#include "cni_error_of.h"
#include "net_specs.h"

using namespace manifold::netlink;
using manifold::cni::CniError;
using manifold::test::cidr;
using manifold::test::code_of;
using manifold::test::ip;
using manifold::test::text;

TEST_CASE("first_free_table skips used and reserved IDs", "[netlink]") {
  CHECK(first_free_table(1000, {}) == 1000);
  CHECK(first_free_table(1000, {1000, 1001, 1003}) == 1002);
  CHECK(first_free_table(250, {250, 251}) == 252);
  CHECK(first_free_table(252, {252}) == 256);  // 253, 254, 255 are default/main/local
  CHECK(first_free_table(253, {}) == 256);
  CHECK(first_free_table(2147483646, {}) == 2147483646);
  CHECK(code_of([] { (void)first_free_table(0, {}); }) == 7);
  CHECK(code_of([] { (void)first_free_table(-3, {}); }) == 7);
  CHECK(code_of([] { (void)first_free_table(2147483646, {2147483646, 2147483647}); }) == 105);
}

TEST_CASE("NetOps validates input before the implementation sees it", "[netlink]") {
  auto state = FakeNetnsState::with_defaults();
  FakeNetOps ops(state);
  CHECK(code_of([&] { (void)ops.find_link("bad name"); }) == 7);
  CHECK(code_of([&] { (void)ops.is_ifname_free(""); }) == 7);
  CHECK(code_of([&] { (void)ops.list_addresses(-1); }) == 7);
  CHECK(code_of([&] { (void)ops.list_routes(AF_PACKET, kMainTable); }) == 7);
  CHECK(code_of([&] { (void)ops.list_routes(AF_INET, -1); }) == 7);
  CHECK(code_of([&] { (void)ops.list_rules(AF_PACKET); }) == 7);
  RouteSpec no_hop;
  no_hop.dst = cidr("10.0.0.0/8");
  CHECK(code_of([&] { (void)ops.add_route(no_hop); }) == 7);  // needs a gateway or a device
  RouteSpec host_bits;
  host_bits.dst = cidr("10.0.0.1/8");
  host_bits.ifindex = 1;
  CHECK(code_of([&] { (void)ops.delete_route(host_bits); }) == 7);
  RuleSpec no_family;
  no_family.table = 1000;
  CHECK(code_of([&] { (void)ops.add_rule(no_family); }) == 7);
  CHECK(code_of([&] { (void)ops.find_free_table(0); }) == 7);
  CHECK(code_of([&] { (void)ops.delete_default_routes(AF_UNSPEC, 0); }) == 7);
  CHECK(code_of([&] { (void)ops.delete_default_routes(AF_INET, -1); }) == 7);
  CHECK(code_of([&] { (void)ops.add_default_route(AF_INET6, ip("10.0.0.1"), 1); }) == 7);
  CHECK(state->journal.empty());  // nothing reached the namespace
}

TEST_CASE("default-route helpers keep exactly one default per family", "[netlink]") {
  auto state = FakeNetnsState::with_defaults();
  const int eth0 = state->add_link("eth0");
  const int net1 = state->add_link("net1");
  state->add_address(eth0, "10.244.1.5/24");
  state->add_address(net1, "192.168.10.5/24");
  state->add_address(eth0, "fd00:1::5/64");
  state->add_address(net1, "fd00:2::5/64");
  FakeNetOps ops(state);
  REQUIRE(ops.add_default_route(AF_INET, ip("10.244.1.1"), eth0) == AddOutcome::Added);
  REQUIRE(ops.add_default_route(AF_INET6, ip("fd00:1::1"), eth0) == AddOutcome::Added);
  REQUIRE(ops.add_default_route(AF_INET, ip("10.244.1.1"), eth0) == AddOutcome::Exists);

  // Move the IPv4 default to net1: delete the others, then add.
  const std::vector<RouteSpec> removed = ops.delete_default_routes(AF_INET, net1);
  REQUIRE(removed.size() == 1);
  CHECK(text(removed[0].gw) == "10.244.1.1");
  CHECK(removed[0].ifindex == eth0);
  CHECK(ops.add_default_route(AF_INET, ip("192.168.10.1"), net1) == AddOutcome::Added);

  auto defaults = [&](int family) {
    std::vector<RouteSpec> out;
    for (const RouteSpec& r : ops.list_routes(family, kMainTable)) {
      if (!r.dst) out.push_back(r);
    }
    return out;
  };
  REQUIRE(defaults(AF_INET).size() == 1);
  CHECK(defaults(AF_INET)[0].ifindex == net1);
  REQUIRE(defaults(AF_INET6).size() == 1);  // the other family is untouched
  CHECK(defaults(AF_INET6)[0].ifindex == eth0);

  // The selected interface keeps its default; a second pass deletes nothing.
  CHECK(ops.delete_default_routes(AF_INET, net1).empty());
  // except_ifindex 0 removes every default of the family, and only defaults.
  CHECK(ops.delete_default_routes(AF_INET6, 0).size() == 1);
  CHECK(defaults(AF_INET6).empty());
  CHECK(ops.list_routes(AF_INET6, kMainTable).size() == 2);  // the connected routes stay

  // The removed routes can be restored verbatim (rollback).
  for (const RouteSpec& r : removed) CHECK(ops.add_route(r) == AddOutcome::Exists);  // same identity as net1's
  CHECK(ops.delete_default_routes(AF_INET, 0).size() == 1);
  for (const RouteSpec& r : removed) CHECK(ops.add_route(r) == AddOutcome::Added);
  CHECK(defaults(AF_INET) == removed);
}
