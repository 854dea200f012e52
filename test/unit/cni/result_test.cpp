// Unit tests for cni/result.h: DNS emptiness, merging results (interface index re-basing, route
// de-duplication, DNS choice) and default-route gateway extraction.
#include "cni/result.h"

#include <catch2/catch.hpp>

using namespace manifold::cni;

namespace {

Result attachment(const std::string& version, const std::string& ifname, const std::string& ip, const std::string& gw) {
  Result r;
  r.cni_version = version;
  r.interfaces = {Interface{"host-" + ifname, "", {}, "", "", ""},
                  Interface{ifname, "0a:58:0a:01:02:03", 1500, "/var/run/netns/pod", "", ""}};
  r.ips = {IpConfig{1, ip, gw}};
  r.routes = {Route{"0.0.0.0/0", gw, {}, {}, {}, {}, {}}};
  return r;
}

}  // namespace

TEST_CASE("Dns::empty is true only when no field is set", "[cni]") {
  Dns dns;
  CHECK(dns.empty());
  dns.domain = "cluster.local";
  CHECK_FALSE(dns.empty());
  dns = Dns{};
  dns.nameservers = {"10.96.0.10"};
  CHECK_FALSE(dns.empty());
  dns = Dns{};
  dns.search = {"svc"};
  CHECK_FALSE(dns.empty());
  dns = Dns{};
  dns.options = {"ndots:5"};
  CHECK_FALSE(dns.empty());
}

TEST_CASE("merge_results re-bases interface indexes and concatenates", "[cni]") {
  Result a = attachment("1.0.0", "eth0", "10.1.0.5/16", "10.1.0.1");
  a.ips.push_back(IpConfig{std::nullopt, "10.1.0.6/16", ""});  // IPAM-style, no index
  Result b = attachment("0.4.0", "net1", "192.168.1.5/24", "192.168.1.1");
  b.dns.nameservers = {"192.168.1.53"};
  Result c = attachment("0.4.0", "net2", "172.16.0.5/24", "172.16.0.1");
  c.ips.push_back(IpConfig{0, "fd00::5/64", ""});
  c.dns.nameservers = {"172.16.0.53"};

  const Result m = merge_results({a, b, c});
  CHECK(m.cni_version == "1.0.0");
  REQUIRE(m.interfaces.size() == 6);
  CHECK(m.interfaces[1].name == "eth0");
  CHECK(m.interfaces[3].name == "net1");
  CHECK(m.interfaces[4].name == "host-net2");
  CHECK(m.interfaces[5].name == "net2");
  REQUIRE(m.ips.size() == 5);
  CHECK(m.ips[0].interface == 1);
  CHECK_FALSE(m.ips[1].interface.has_value());
  CHECK(m.ips[2].interface == 3);
  CHECK(m.ips[2].address == "192.168.1.5/24");
  CHECK(m.ips[3].interface == 5);
  CHECK(m.ips[4].interface == 4);
  CHECK(m.ips[4].address == "fd00::5/64");
  // Every re-based index points at the interface it pointed at before.
  CHECK(m.interfaces[static_cast<std::size_t>(*m.ips[3].interface)] == c.interfaces[1]);
  CHECK(m.dns.nameservers == std::vector<std::string>{"192.168.1.53"});
  REQUIRE(m.routes.size() == 3);
  CHECK(m.routes[2].gw == "172.16.0.1");
}

TEST_CASE("merge_results drops only exact duplicate routes", "[cni]") {
  Result a = attachment("1.1.0", "eth0", "10.1.0.5/16", "10.1.0.1");
  a.routes.push_back(Route{"10.96.0.0/12", "", {}, {}, {}, {}, {}});
  Result b = attachment("1.1.0", "net1", "10.1.0.6/16", "10.1.0.1");    // same default route
  b.routes.push_back(Route{"10.96.0.0/12", "", 1400, {}, {}, {}, {}});  // differs in mtu
  b.routes.push_back(Route{"10.96.0.0/12", "", {}, {}, {}, {}, {}});    // exact duplicate

  const Result m = merge_results({a, b});
  REQUIRE(m.routes.size() == 3);
  CHECK(m.routes[0].dst == "0.0.0.0/0");
  CHECK(m.routes[1].dst == "10.96.0.0/12");
  CHECK_FALSE(m.routes[1].mtu.has_value());
  CHECK(m.routes[2].mtu == 1400);
  CHECK(m.dns.empty());
}

TEST_CASE("merge_results of nothing and of one", "[cni]") {
  CHECK(merge_results({}) == Result{});
  const Result a = attachment("0.3.1", "eth0", "10.1.0.5/16", "10.1.0.1");
  CHECK(merge_results({a}) == a);
}

TEST_CASE("default_route_gateways lists default gateways in order without duplicates", "[cni]") {
  Result r;
  r.routes = {Route{"10.96.0.0/12", "10.1.0.254", {}, {}, {}, {}, {}},
              Route{"0.0.0.0/0", "10.1.0.1", {}, {}, {}, {}, {}},
              Route{"::/0", "fd00::1", {}, {}, {}, {}, {}},
              Route{"0.0.0.0/0", "10.1.0.1", {}, {}, {}, 100, {}},
              Route{"::0/0", "FD00:0::1", {}, {}, {}, {}, {}},
              Route{"0.0.0.0/0", "", {}, {}, {}, {}, {}},
              Route{"0.0.0.0/0", "10.1.0.2", {}, {}, {}, {}, {}},
              Route{"0.0.0.0/1", "10.1.0.3", {}, {}, {}, {}, {}}};
  CHECK(default_route_gateways(r) == std::vector<std::string>{"10.1.0.1", "fd00::1", "10.1.0.2"});
  CHECK(default_route_gateways(Result{}).empty());
}
