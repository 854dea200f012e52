// Unit tests for lib/netlink/fake_net_ops: the in-memory namespace behaves as the kernel does for
// the operations manifold uses (the same expectations are checked against real namespaces by
// test/integration/netlink).
#include "netlink/fake_net_ops.h"

#include <netlink/errno.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>

#include "cni/error.h"
#include "fake_pod.h"
#include "net_specs.h"

using namespace manifold::netlink;
using manifold::cni::CniError;
using manifold::test::cidr;
using manifold::test::ip;
using manifold::test::route;
using manifold::test::rule;
using manifold::test::text;

namespace {

// The shared pod, with a macvlan net1 that also has an IPv6 address.
struct Pod : manifold::test::FakePod {
  Pod() : FakePod("macvlan", "/run/netns/pod") { state->add_address(net1, "2001:db8:10::5/64"); }
};

}  // namespace

TEST_CASE("fake: links and addresses", "[netlink]") {
  Pod pod;
  CHECK(pod.ops.netns_path() == "/run/netns/pod");
  const auto links = pod.ops.list_links();
  REQUIRE(links.size() == 3);
  CHECK(links[0].name == "lo");
  CHECK(links[2].name == "net1");
  CHECK(links[2].kind == "macvlan");
  CHECK(links[2].mac == "02:00:00:00:00:03");

  REQUIRE(pod.ops.find_link("net1"));
  CHECK(pod.ops.find_link("net1")->index == pod.net1);
  CHECK_FALSE(pod.ops.find_link("net2"));
  CHECK(pod.ops.is_ifname_free("net2"));
  CHECK_FALSE(pod.ops.is_ifname_free("eth0"));

  const auto addrs = pod.ops.list_addresses(pod.net1);
  REQUIRE(addrs.size() == 2);
  CHECK(addrs[0] == AddressInfo{AF_INET, pod.net1, cidr("192.168.10.5/24")});
  CHECK(addrs[1] == AddressInfo{AF_INET6, pod.net1, cidr("2001:db8:10::5/64")});
  CHECK(pod.ops.list_addresses().size() == 3);

  CHECK_THROWS_AS(pod.state->add_link("eth0"), CniError);
  CHECK_THROWS_AS(pod.state->add_address(42, "10.0.0.1/8"), CniError);
}

TEST_CASE("fake: addresses bring their connected routes, as the kernel does", "[netlink]") {
  Pod pod;
  const auto v4 = pod.ops.list_routes(AF_INET, kMainTable);
  REQUIRE(v4.size() == 2);
  RouteSpec expected;
  expected.family = AF_INET;
  expected.dst = cidr("192.168.10.0/24");
  expected.ifindex = pod.net1;
  expected.scope = kScopeLink;
  expected.protocol = kProtoKernel;
  expected.prefsrc = ip("192.168.10.5");
  CHECK(v4[1] == expected);
  const auto v6 = pod.ops.list_routes(AF_INET6, kMainTable);
  REQUIRE(v6.size() == 1);
  CHECK(text(v6[0].dst) == "2001:db8:10::/64");
  CHECK(v6[0].priority == 256);
  CHECK(pod.ops.list_routes(AF_UNSPEC, kAllTables).size() == 3);

  pod.state->add_address(pod.eth0, "10.9.9.9/32");
  CHECK(pod.ops.list_routes(AF_INET, kMainTable).size() == 2);  // no prefix route for a /32
}

TEST_CASE("fake: add/list/delete routes in a table", "[netlink]") {
  Pod pod;
  const int table = 1000;
  // Copy net1's main-table routes into the table, then add its default.
  for (const RouteSpec& r : pod.ops.list_routes(AF_UNSPEC, kMainTable)) {
    if (r.ifindex != pod.net1) continue;
    RouteSpec copy = r;
    copy.table = table;
    CHECK(pod.ops.add_route(copy) == AddOutcome::Added);
  }
  CHECK(pod.ops.add_route(route("", "192.168.10.1", pod.net1, table)) == AddOutcome::Added);
  CHECK(pod.ops.add_route(route("", "192.168.10.1", pod.net1, table)) == AddOutcome::Exists);
  CHECK(pod.ops.add_route(route("0.0.0.0/0", "192.168.10.9", pod.net1, table)) == AddOutcome::Exists);

  const auto listed = pod.ops.list_routes(AF_INET, table);
  REQUIRE(listed.size() == 2);
  CHECK(text(listed[0].prefsrc) == "192.168.10.5");
  CHECK(listed[0].protocol == kProtoKernel);  // copied verbatim
  CHECK(text(listed[1].gw) == "192.168.10.1");
  CHECK(listed[1].scope == kScopeUniverse);
  CHECK(listed[1].protocol == kProtoBoot);
  CHECK(pod.ops.list_routes(AF_INET6, table).size() == 1);
  CHECK(pod.ops.list_routes(AF_INET, kMainTable).size() == 2);  // main is untouched

  CHECK(pod.ops.delete_route(route("", "192.168.10.1", pod.net1, table)) == DeleteOutcome::Deleted);
  CHECK(pod.ops.delete_route(route("", "192.168.10.1", pod.net1, table)) == DeleteOutcome::NotFound);
  CHECK(pod.ops.delete_route(route("192.168.10.0/24", "", pod.eth0, table)) == DeleteOutcome::NotFound);
  CHECK(pod.ops.delete_route(route("192.168.10.0/24", "", 0, table)) == DeleteOutcome::Deleted);
  CHECK(pod.ops.list_routes(AF_INET, table).empty());

  REQUIRE(pod.state->journal.size() == 5);
  CHECK(pod.state->journal[2] == "add route default via 192.168.10.1 dev #3 table 1000 proto boot");
  CHECK(pod.state->journal[3] == "delete route default via 192.168.10.1 dev #3 table 1000 proto boot");
}

TEST_CASE("fake: next hops are validated like the kernel does", "[netlink]") {
  Pod pod;
  auto code = [&](const RouteSpec& r) {
    try {
      (void)pod.ops.add_route(r);
    } catch (const CniError& e) {
      CHECK(e.code() == 105);
      CHECK(e.details() == "netns /run/netns/pod");
      return std::string(e.msg());
    }
    return std::string("ok");
  };
  CHECK(code(route("10.50.0.0/16", "", 99, 1000)) ==
        "netlink: add route 10.50.0.0/16 dev #99 table 1000: No such device");
  CHECK(code(route("10.50.0.0/16", "172.16.0.1", pod.net1, 1000)) ==
        "netlink: add route 10.50.0.0/16 via 172.16.0.1 dev #3 table 1000: Unspecific failure "
        "(Network is "
        "unreachable)");  // gateway not on net1's subnet
  CHECK(code(route("10.50.0.0/16", "172.16.0.1", 0, 1000)).find("(Network is unreachable)") != std::string::npos);
  CHECK(code(route("2001:db8:99::/64", "2001:db8:5::1", pod.net1, 1000)).find("(No route to host)") !=
        std::string::npos);
  CHECK(code(route("2001:db8:99::/64", "fe80::1", 0, 1000)).find("Invalid input data or parameter") !=
        std::string::npos);                                                   // a link-local gateway needs a device
  CHECK(code(route("2001:db8:99::/64", "fe80::1", pod.net1, 1000)) == "ok");  // link-local gateway
  // Without an interface, the kernel resolves it from the gateway's subnet.
  CHECK(code(route("10.60.0.0/16", "192.168.10.1", 0, 1000)) == "ok");
  CHECK(pod.ops.list_routes(AF_INET, 1000).at(0).ifindex == pod.net1);

  const int down = pod.state->add_link("net2", "veth", false);
  pod.state->add_address(down, "10.70.0.2/24");
  CHECK(code(route("10.71.0.0/16", "", down, 1000)).find("Unspecific failure (Network is down)") != std::string::npos);
  CHECK(code(route("10.71.0.0/16", "10.70.0.1", down, 1000)).find("(Network is unreachable)") != std::string::npos);
  CHECK(code(route("2001:db8:71::/64", "fe80::1", down, 1000)).find("(Network is down)") != std::string::npos);
}

TEST_CASE("fake: rules at a fixed priority", "[netlink]") {
  Pod pod;
  const RuleSpec ours = rule("192.168.10.5/32", 1000, 30000);
  CHECK(pod.ops.add_rule(ours) == AddOutcome::Added);
  CHECK(pod.ops.add_rule(ours) == AddOutcome::Exists);
  CHECK(pod.ops.add_rule(rule("2001:db8:10::5/128", 1000, 30000)) == AddOutcome::Added);

  const auto v4 = pod.ops.list_rules(AF_INET);
  REQUIRE(v4.size() == 4);
  CHECK(v4[1] == normalize_rule(ours));  // kernel order: by priority
  CHECK(pod.ops.list_rules(AF_INET6).size() == 3);
  CHECK(pod.ops.list_rules(AF_UNSPEC).size() == 7);

  CHECK(pod.ops.delete_rule(ours) == DeleteOutcome::Deleted);
  CHECK(pod.ops.delete_rule(ours) == DeleteOutcome::NotFound);
  CHECK(pod.ops.list_rules(AF_INET).size() == 3);
}

TEST_CASE("fake: a rule without priority gets the kernel's default", "[netlink]") {
  Pod pod;
  CHECK(pod.ops.add_rule(rule("192.168.10.5/32", 1000, kRulePriorityAuto)) == AddOutcome::Added);
  CHECK(pod.ops.list_rules(AF_INET)[1].priority == 32765);  // one below main's 32766
  CHECK(pod.ops.add_rule(rule("192.168.10.6/32", 1000, kRulePriorityAuto)) == AddOutcome::Added);
  CHECK(pod.ops.list_rules(AF_INET)[1].priority == 32764);
}

TEST_CASE("fake: free table search sees rules and routes", "[netlink]") {
  Pod pod;
  CHECK(pod.ops.find_free_table(1000) == 1000);
  CHECK(pod.ops.add_rule(rule("192.168.10.5/32", 1000, 30000)) == AddOutcome::Added);
  CHECK(pod.ops.find_free_table(1000) == 1001);
  CHECK(pod.ops.add_route(route("", "192.168.10.1", pod.net1, 1001)) == AddOutcome::Added);
  CHECK(pod.ops.find_free_table(1000) == 1002);
  pod.state->extra_tables.insert(1002);
  CHECK(pod.ops.find_free_table(1000) == 1003);
  CHECK(pod.ops.find_free_table(100) == 100);
  CHECK(pod.ops.find_free_table(254) == 256);
}

TEST_CASE("fake: removing a link removes its addresses and routes", "[netlink]") {
  Pod pod;
  CHECK(pod.ops.add_route(route("", "192.168.10.1", pod.net1, 1000)) == AddOutcome::Added);
  CHECK(pod.ops.add_rule(rule("192.168.10.5/32", 1000, 30000)) == AddOutcome::Added);
  pod.state->remove_link("net1");
  CHECK(pod.ops.is_ifname_free("net1"));
  CHECK(pod.ops.list_addresses(pod.net1).empty());
  CHECK(pod.ops.list_routes(AF_UNSPEC, kAllTables).size() == 1);  // eth0's connected route
  // Rules outlive the link (the kernel keeps them); DEL must still remove them.
  CHECK(pod.ops.delete_rule(rule("192.168.10.5/32", 1000, 30000)) == DeleteOutcome::Deleted);
  CHECK(pod.ops.delete_route(route("", "192.168.10.1", pod.net1, 1000)) == DeleteOutcome::NotFound);
  pod.state->remove_link("net1");  // idempotent
}

TEST_CASE("fake: injected failures map to CniError(Netlink) once", "[netlink]") {
  Pod pod;
  pod.state->fail_next(FakeOp::AddRule, NLE_PERM);
  try {
    (void)pod.ops.add_rule(rule("192.168.10.5/32", 1000, 30000));
    FAIL("no exception");
  } catch (const CniError& e) {
    CHECK(e.code() == 105);
    CHECK(e.msg() == "netlink: add rule 30000: from 192.168.10.5/32 lookup 1000: Operation not permitted");
    CHECK(e.details() == "netns /run/netns/pod");
  }
  CHECK(pod.ops.add_rule(rule("192.168.10.5/32", 1000, 30000)) == AddOutcome::Added);

  pod.state->fail_next(FakeOp::ListRoutes, -NLE_DUMP_INTR);
  CHECK_THROWS_AS(pod.ops.list_routes(AF_INET, kMainTable), CniError);
  CHECK_NOTHROW(pod.ops.list_routes(AF_INET, kMainTable));

  pod.state->fail_next(FakeOp::FindLink, NLE_NOMEM);
  CHECK_THROWS_AS(pod.ops.is_ifname_free("net9"), CniError);
  pod.state->fail_next(FakeOp::TablesInUse, NLE_NOMEM);
  CHECK_THROWS_AS(pod.ops.find_free_table(1000), CniError);
  REQUIRE(pod.ops.add_default_route(AF_INET, ip("10.244.1.1"), pod.eth0) == AddOutcome::Added);
  pod.state->fail_next(FakeOp::DeleteRoute, NLE_BUSY);
  CHECK_THROWS_AS(pod.ops.delete_default_routes(AF_INET, 0), CniError);
  CHECK(pod.ops.delete_default_routes(AF_INET, 0).size() == 1);
}

TEST_CASE("fake: two views share one namespace", "[netlink]") {
  auto state = FakeNetnsState::with_defaults();
  const int eth0 = state->add_link("eth0");
  state->add_address(eth0, "10.0.0.2/24");
  NetOpsFactory factory = [state](const std::string& path) -> std::unique_ptr<NetOps> {
    return std::make_unique<FakeNetOps>(state, path);
  };
  std::unique_ptr<NetOps> a = factory("/run/netns/x");
  CHECK(a->netns_path() == "/run/netns/x");
  CHECK(a->add_route(route("10.1.0.0/16", "10.0.0.1", eth0, kMainTable)) == AddOutcome::Added);
  std::unique_ptr<NetOps> b = factory("/run/netns/x");
  CHECK(b->delete_route(route("10.1.0.0/16", "", 0, kMainTable)) == DeleteOutcome::Deleted);
  CHECK(state->journal.size() == 2);
}
