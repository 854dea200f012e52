// Test fixture: a pod's network namespace in the fake netlink layer, shared by the netlink and
// scoping unit tests. It has lo, eth0 10.244.1.5/24 (the cluster network) and net1 192.168.10.5/24
// (a secondary network) and no routes; RoutedFakePod adds the cluster default route and an IPAM
// route on net1. Each test adds what it is about in its own fixture derived from one of them.
#pragma once

#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "net_specs.h"
#include "netlink/fake_net_ops.h"

namespace manifold::test {

/// A fake pod namespace: lo, eth0 10.244.1.5/24 and net1 192.168.10.5/24, no routes.
struct FakePod {
  std::shared_ptr<netlink::FakeNetnsState> state = netlink::FakeNetnsState::with_defaults();
  netlink::FakeNetOps ops;
  int eth0 = 0;  ///< eth0's ifindex
  int net1 = 0;  ///< net1's ifindex

  /// Builds the namespace; net1 is a link of kind `net1_kind`, and ops report `netns_path`.
  explicit FakePod(const std::string& net1_kind = "veth", std::string netns_path = "/var/run/netns/fake")
      : ops(state, std::move(netns_path)) {
    eth0 = state->add_link("eth0");
    net1 = state->add_link("net1", net1_kind);
    state->add_address(eth0, "10.244.1.5/24");
    state->add_address(net1, "192.168.10.5/24");
  }
};

/// The pod the scoping tests are written against: FakePod plus the IPv4 default route via 10.244.1.1
/// on eth0 and net1's IPAM route to 192.168.20.0/24 via 192.168.10.1.
struct RoutedFakePod : FakePod {
  /// Builds the namespace and adds the two routes.
  RoutedFakePod() {
    REQUIRE(ops.add_default_route(AF_INET, ip("10.244.1.1"), eth0) == netlink::AddOutcome::Added);
    netlink::RouteSpec ipam;
    ipam.dst = cidr("192.168.20.0/24");
    ipam.gw = ip("192.168.10.1");
    ipam.ifindex = net1;
    REQUIRE(ops.add_route(ipam) == netlink::AddOutcome::Added);
  }
};

}  // namespace manifold::test
