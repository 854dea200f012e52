// Unit tests for lib/netlink/default_route against FakeNetOps: request validation (ECMP, two
// attachments for one family, bad gateways and names), apply for IPv4 and IPv6 (exactly one default
// per family, on the chosen interface), undo on failure, CHECK, and the pure result rewrite.
#include "scoping/default_route.h"

#include <sys/socket.h>

#include <catch2/catch.hpp>

#include "cni/error.h"
#include "netlink/fake_net_ops.h"
#include "cni_error_of.h"
#include "fake_pod.h"
#include "net_specs.h"

using namespace manifold;
using namespace manifold::netlink;
using namespace manifold::scoping;
using manifold::cni::CniError;
using manifold::test::code_of;
using manifold::test::ip;

namespace {

// eth0 (cluster, default routes of both families) and net1 (no default route).
struct Pod : test::FakePod {
  Pod() {
    state->add_address(eth0, "fd00:244::5/64");
    state->add_address(net1, "2001:db8:10::5/64");
    REQUIRE(ops.add_default_route(AF_INET, ip("10.244.1.1"), eth0) == AddOutcome::Added);
    REQUIRE(ops.add_default_route(AF_INET6, ip("fd00:244::1"), eth0) == AddOutcome::Added);
  }

  std::vector<std::string> defaults(int family) {
    std::vector<std::string> out;
    for (const RouteSpec& r : ops.list_routes(family, kMainTable))
      if (!r.dst) out.push_back(to_string(r));
    return out;
  }
};

cni::Route route(const char* dst, const char* gw) {
  cni::Route r;
  r.dst = dst;
  r.gw = gw;
  return r;
}

}  // namespace

TEST_CASE("default route: requests are validated across attachments", "[netlink]") {
  const auto requests = plan_default_routes({{"eth0", {}}, {"net1", {"192.168.10.1"}}, {"net2", {"2001:DB8:20::1"}}});
  CHECK(requests == std::vector<DefaultRouteRequest>{{"net1", AF_INET, ip("192.168.10.1")},
                                                     {"net2", AF_INET6, ip("2001:db8:20::1")}});
  CHECK(plan_default_routes({{"net1", {"192.168.10.1", "2001:db8::1"}}}).size() == 2);
  CHECK(plan_default_routes({}).empty());

  std::string msg;
  CHECK(code_of([&] { (void)plan_default_routes({{"net1", {"192.168.10.1"}}, {"net2", {"10.0.0.1"}}}); }, &msg) == 7);
  CHECK(msg.find("net1") != std::string::npos);
  CHECK(msg.find("net2") != std::string::npos);
  CHECK(code_of([&] { (void)plan_default_routes({{"net1", {"2001:db8::1"}}, {"net2", {"2001:db8::2"}}}); }) == 7);
  CHECK(code_of([&] { (void)plan_default_routes({{"net1", {"10.0.0.1", "10.0.0.2"}}}); }, &msg) == 7);
  CHECK(msg.find("ECMP") != std::string::npos);
  CHECK(code_of([&] { (void)plan_default_routes({{"net1", {"10.0.0.1/24"}}}); }) == 7);
  CHECK(code_of([&] { (void)plan_default_routes({{"net1", {"gateway"}}}); }) == 7);
  CHECK(code_of([&] { (void)plan_default_routes({{"net 1", {"10.0.0.1"}}}); }) == 7);
  CHECK(code_of([&] { (void)plan_default_routes({{"abcdefghijklmnop", {"10.0.0.1"}}}); }) == 7);
}

TEST_CASE("default route: IPv4 moves to the chosen interface, IPv6 stays", "[netlink]") {
  Pod pod;
  const auto v6_before = pod.defaults(AF_INET6);
  const auto changes = apply_default_routes(pod.ops, {{"net1", AF_INET, ip("192.168.10.1")}});
  CHECK(pod.defaults(AF_INET) == std::vector<std::string>{"default via 192.168.10.1 dev #3 proto boot"});
  CHECK(pod.defaults(AF_INET6) == v6_before);
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].added);
  CHECK(changes[0].ifindex == pod.net1);
  REQUIRE(changes[0].removed.size() == 1);
  CHECK(changes[0].removed[0].ifindex == pod.eth0);
  CHECK(check_default_route(pod.ops, {"net1", AF_INET, ip("192.168.10.1")}).empty());
  // Applying again changes nothing.
  pod.state->journal.clear();
  const auto again = apply_default_routes(pod.ops, {{"net1", AF_INET, ip("192.168.10.1")}});
  CHECK_FALSE(again[0].added);
  CHECK(again[0].removed.empty());
  CHECK(pod.state->journal.empty());
}

TEST_CASE("default route: IPv6 moves to the chosen interface", "[netlink]") {
  Pod pod;
  const auto v4_before = pod.defaults(AF_INET);
  (void)apply_default_routes(pod.ops, {{"net1", AF_INET6, ip("2001:db8:10::1")}});
  CHECK(pod.defaults(AF_INET6) == std::vector<std::string>{"default via 2001:db8:10::1 dev #3 proto boot metric 1024"});
  CHECK(pod.defaults(AF_INET) == v4_before);
  CHECK(check_default_route(pod.ops, {"net1", AF_INET6, ip("2001:db8:10::1")}).empty());
}

TEST_CASE("default route: the chosen interface keeps exactly one, via the gateway", "[netlink]") {
  Pod pod;
  RouteSpec other;
  other.gw = ip("192.168.10.254");
  other.ifindex = pod.net1;
  other.priority = 10;
  REQUIRE(pod.ops.add_route(other) == AddOutcome::Added);
  (void)apply_default_routes(pod.ops, {{"net1", AF_INET, ip("192.168.10.1")}});
  CHECK(pod.defaults(AF_INET) == std::vector<std::string>{"default via 192.168.10.1 dev #3 proto boot"});
  // Choosing the cluster interface removes the others' defaults and keeps its own.
  Pod pod2;
  REQUIRE(pod2.ops.add_default_route(AF_INET, ip("192.168.10.1"), pod2.net1, kMainTable) == AddOutcome::Exists);
  RouteSpec net1_default;
  net1_default.gw = ip("192.168.10.1");
  net1_default.ifindex = pod2.net1;
  net1_default.priority = 100;
  REQUIRE(pod2.ops.add_route(net1_default) == AddOutcome::Added);
  const auto changes = apply_default_routes(pod2.ops, {{"eth0", AF_INET, ip("10.244.1.1")}});
  CHECK(pod2.defaults(AF_INET) == std::vector<std::string>{"default via 10.244.1.1 dev #2 proto boot"});
  CHECK_FALSE(changes[0].added);
  CHECK(changes[0].removed.size() == 1);
}

TEST_CASE("default route: a failure leaves the routes as they were", "[netlink]") {
  Pod pod;
  const auto v4 = pod.defaults(AF_INET);
  const auto v6 = pod.defaults(AF_INET6);
  // The IPv6 gateway is not reachable through net1: the kernel refuses, everything is undone.
  CHECK(code_of([&] {
          (void)apply_default_routes(pod.ops,
                                     {{"net1", AF_INET, ip("192.168.10.1")}, {"net1", AF_INET6, ip("2001:db8:99::1")}});
        }) == 105);
  CHECK(pod.defaults(AF_INET) == v4);
  CHECK(pod.defaults(AF_INET6) == v6);
  CHECK(code_of([&] { (void)apply_default_routes(pod.ops, {{"net9", AF_INET, ip("192.168.10.1")}}); }) == 105);
  CHECK(pod.defaults(AF_INET) == v4);
}

TEST_CASE("default route: undo restores what apply changed", "[netlink]") {
  Pod pod;
  const auto v4 = pod.defaults(AF_INET);
  const auto changes = apply_default_routes(pod.ops, {{"net1", AF_INET, ip("192.168.10.1")}});
  undo_default_routes(pod.ops, changes);
  CHECK(pod.defaults(AF_INET) == v4);
}

TEST_CASE("default route: undo restores default routes of one identity on several interfaces", "[netlink]") {
  // The cluster network and a network whose IPAM adds a default route of the same metric (as the
  // reference plugins do with ECMP adds): both are removed, and both must come back.
  Pod pod;
  RouteSpec net1_default;
  net1_default.gw = ip("192.168.10.1");
  net1_default.ifindex = pod.net1;
  REQUIRE(pod.ops.add_route(net1_default, RouteAddMode::Append) == AddOutcome::Added);
  REQUIRE(pod.ops.add_route(net1_default, RouteAddMode::Append) == AddOutcome::Exists);
  const auto v4 = pod.defaults(AF_INET);
  REQUIRE(v4.size() == 2);
  const auto changes = apply_default_routes(pod.ops, {{"net1", AF_INET, std::nullopt}});
  CHECK(pod.defaults(AF_INET).empty());
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].removed.size() == 2);
  undo_default_routes(pod.ops, changes);
  CHECK(pod.defaults(AF_INET) == v4);
}

TEST_CASE("default route: CHECK reports a missing or extra default", "[netlink]") {
  Pod pod;
  (void)apply_default_routes(pod.ops, {{"net1", AF_INET, ip("192.168.10.1")}});
  REQUIRE(pod.ops.add_default_route(AF_INET, ip("10.244.1.1"), pod.eth0) == AddOutcome::Exists);
  // The fake refuses a second default with the same metric; a different metric is a second route.
  RouteSpec extra;
  extra.gw = ip("10.244.1.1");
  extra.ifindex = pod.eth0;
  extra.priority = 5;
  REQUIRE(pod.ops.add_route(extra) == AddOutcome::Added);
  auto diffs = check_default_route(pod.ops, {"net1", AF_INET, ip("192.168.10.1")});
  REQUIRE(diffs.size() == 1);
  CHECK(diffs[0].find("unexpected default route") != std::string::npos);
  REQUIRE(pod.ops.delete_route(extra) == DeleteOutcome::Deleted);
  RouteSpec ours;
  ours.gw = ip("192.168.10.1");
  REQUIRE(pod.ops.delete_route(ours) == DeleteOutcome::Deleted);
  diffs = check_default_route(pod.ops, {"net1", AF_INET, ip("192.168.10.1")});
  REQUIRE(diffs.size() == 1);
  CHECK(diffs[0].find("missing") != std::string::npos);
  pod.state->remove_link("net1");
  diffs = check_default_route(pod.ops, {"net1", AF_INET, ip("192.168.10.1")});
  REQUIRE(diffs.size() == 1);
  CHECK(diffs[0].find("interface is missing") != std::string::npos);
}

TEST_CASE("default route: results are rewritten to match", "[netlink]") {
  cni::Result eth0;
  eth0.routes = {route("0.0.0.0/0", "10.244.1.1"), route("::/0", "fd00:244::1"), route("10.96.0.0/12", "10.244.1.1")};
  cni::Result net1;
  net1.routes = {route("192.168.20.0/24", "192.168.10.1")};
  const std::vector<DefaultRouteRequest> requests{{"net1", AF_INET, ip("192.168.10.1")}};
  rewrite_default_routes(eth0, "eth0", requests);
  rewrite_default_routes(net1, "net1", requests);
  CHECK(eth0.routes == std::vector<cni::Route>{route("::/0", "fd00:244::1"), route("10.96.0.0/12", "10.244.1.1")});
  CHECK(net1.routes ==
        std::vector<cni::Route>{route("192.168.20.0/24", "192.168.10.1"), route("0.0.0.0/0", "192.168.10.1")});
  CHECK(cni::default_route_gateways(net1) == std::vector<std::string>{"192.168.10.1"});
  CHECK(cni::default_route_gateways(eth0) == std::vector<std::string>{"fd00:244::1"});

  const std::vector<DefaultRouteRequest> v6{{"net1", AF_INET6, ip("2001:db8:10::1")}};
  rewrite_default_routes(eth0, "eth0", v6);
  rewrite_default_routes(net1, "net1", v6);
  CHECK(eth0.routes == std::vector<cni::Route>{route("10.96.0.0/12", "10.244.1.1")});
  CHECK(cni::default_route_gateways(net1) == std::vector<std::string>{"192.168.10.1", "2001:db8:10::1"});
  // No request: nothing changes.
  cni::Result untouched = eth0;
  rewrite_default_routes(untouched, "eth0", {});
  CHECK(untouched == eth0);
}
