// The scoping façade against the real kernel and the node's real iptables, per backend, in a
// throwaway namespace shaped like the unit tests' routed pod: eth0 with the
// default route, net1 192.168.10.5/24 + 2001:db8:10::5/64 with an IPAM route. Checks that applying
// twice leaves `ip rule`, every routing table and iptables-save identical, that the main table is
// never changed, that source-bound lookups use our table, that CHECK passes on the real kernel and
// fails after any single deletion (and a re-apply repairs it), and that DEL twice leaves nothing,
// also when the link is already gone and only the plan is known.
#include <catch2/catch.hpp>

#include "cni/error.h"
#include "firewall/iptables_types.h"
#include "netlink/real_net_ops.h"
#include "netns_fixture.h"
#include "scoping/scoping.h"

using namespace manifold;
using namespace manifold::firewall;
using namespace manifold::scoping;
using namespace manifold::firewall::itest;
using manifold::scoping::IptablesRunnerPool;
using manifold::scoping::ScopingEnv;
using manifold::scoping::ScopingPlan;

namespace {

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// eth0 and net1 as veth pairs inside the namespace, addressed like the reference pod.
void build_pod(const TestNetns& ns) {
  for (const char* cmd : {
           "sysctl -qw net.ipv6.conf.all.accept_dad=0",
           "sysctl -qw net.ipv6.conf.default.accept_dad=0",
           "ip link add eth0 type veth peer name peer0",
           "ip link add net1 type veth peer name peer1",
           "ip link set eth0 up",
           "ip link set peer0 up",
           "ip link set net1 up",
           "ip link set peer1 up",
           "ip addr add 10.244.1.5/24 dev eth0",
           "ip route add default via 10.244.1.1 dev eth0",
           "ip addr add 192.168.10.5/24 dev net1",
           "ip -6 addr add 2001:db8:10::5/64 dev net1 nodad",
           "ip route add 192.168.20.0/24 via 192.168.10.1 dev net1",
       }) {
    const CommandResult r = ns.run(cmd);
    INFO(cmd << ": " << r.out);
    REQUIRE(r.rc == 0);
  }
}

cni::Result net1_result() {
  cni::Result r;
  r.cni_version = "1.0.0";
  cni::Interface itf;
  itf.name = "net1";
  r.interfaces.push_back(itf);
  r.ips.push_back({0, "192.168.10.5/24", "192.168.10.1"});
  r.ips.push_back({0, "2001:db8:10::5/64", "2001:db8:10::1"});
  return r;
}

ScopingPlan plan_for(Backend backend) {
  Json top = Json::parse(R"({"sourceRouting": {"enabled": true}, "mesh": {"enabled": true}})");
  top["mesh"]["iptablesMode"] = std::string(backend_name(backend));
  return scoping::plan_scoping(top, Json::object(), nullptr, "net1");
}

// Each command separately: TestNetns::run puts only the first command of a list in the namespace.
std::string rules_text(const TestNetns& ns) { return ns.run("ip rule show").out + ns.run("ip -6 rule show").out; }
std::string main_text(const TestNetns& ns) {
  return ns.run("ip route show table main").out + ns.run("ip -6 route show table main").out;
}
std::string tables_text(const TestNetns& ns) {
  return ns.run("ip route show table all").out + ns.run("ip -6 route show table all").out;
}
std::string table_text(const TestNetns& ns, int table) {
  const std::string id = std::to_string(table);
  // A table that never existed makes `ip` complain on stderr; that counts as empty.
  return ns.run("sh -c 'ip route show table " + id + " 2>/dev/null'").out +
         ns.run("sh -c 'ip -6 route show table " + id + " 2>/dev/null'").out;
}
std::string nat_text(const TestNetns& ns, Backend backend) {
  return ns.nat_rules(Family::V4, backend) + ns.nat_rules(Family::V6, backend);
}

// A namespace ready for the test, or a skip.
#define SCOPING_SKIP_UNLESS_USABLE(ns, backend)   \
  FW_SKIP_UNLESS_USABLE(ns, Family::V4, backend); \
  FW_SKIP_UNLESS_USABLE(ns, Family::V6, backend)

}  // namespace

TEST_CASE("apply twice leaves ip rule, the tables and iptables-save identical", "[scoping][netns]") {
  const Backend backend = GENERATE(Backend::Nft, Backend::Legacy);
  INFO(backend_name(backend));
  TestNetns ns;
  SCOPING_SKIP_UNLESS_USABLE(ns, backend);
  build_pod(ns);
  netlink::RealNetOps ops(ns.path());
  IptablesRunnerPool pool = IptablesRunnerPool::real(ns.path());
  ScopingEnv env{ops, pool};
  const std::string main_before = main_text(ns);

  const Json first = scoping::apply_scoping(env, plan_for(backend), net1_result());
  const std::string rules = rules_text(ns);
  const std::string tables = tables_text(ns);
  const std::string nat = nat_text(ns, backend);
  CHECK(has(rules, "30000:\tfrom 192.168.10.5 lookup 1000"));
  CHECK(has(rules, "30000:\tfrom 2001:db8:10::5 lookup 1001"));
  CHECK(has(nat, "-A PREROUTING -i net1 -p tcp"));
  CHECK(main_text(ns) == main_before);
  const std::string get = ns.run("ip route get 192.168.30.7 from 192.168.10.5").out;
  CHECK(has(get, "via 192.168.10.1 dev net1 table 1000"));
  CHECK(has(ns.run("ip route get 192.168.30.7").out, "via 10.244.1.1 dev eth0"));
  CHECK(has(table_text(ns, 1000), "default via 192.168.10.1 dev net1"));
  CHECK(has(table_text(ns, 1000), "192.168.20.0/24 via 192.168.10.1 dev net1"));
  CHECK(has(table_text(ns, 1001), "default via 2001:db8:10::1 dev net1"));
  CHECK(scoping::check_scoping(env, first).empty());

  const Json second = scoping::apply_scoping(env, plan_for(backend), net1_result());
  CHECK(rules_text(ns) == rules);
  CHECK(tables_text(ns) == tables);
  CHECK(nat_text(ns, backend) == nat);
  CHECK(second["sourceRouting"] == first["sourceRouting"]);
  CHECK(scoping::check_scoping(env, second).empty());
}

TEST_CASE("CHECK fails after any single deletion and a re-apply repairs it", "[scoping][netns]") {
  const Backend backend = GENERATE(Backend::Nft, Backend::Legacy);
  const std::string ipt = std::string("iptables-") + std::string(backend_name(backend));
  const std::string ip6t = std::string("ip6tables-") + std::string(backend_name(backend));
  const std::string deletion = GENERATE_COPY(
      std::string("ip rule del priority 30000 from 192.168.10.5 lookup 1000"),
      std::string("ip -6 rule del priority 30000 from 2001:db8:10::5 lookup 1001"),
      std::string("ip route del default via 192.168.10.1 dev net1 table 1000"),
      std::string("ip route del 192.168.10.0/24 dev net1 table 1000"),
      std::string("ip -6 route del 2001:db8:10::/64 dev net1 table 1001"),
      ipt + " -t nat -D PREROUTING -i net1 -p tcp -m comment --comment cnimesh/net1/jump-inbound -j CNIMESH-IN-net1",
      ip6t + " -t nat -D OUTPUT -o net1 -p tcp -m comment --comment cnimesh/net1/jump-outbound -j CNIMESH-OUT-net1",
      ipt +
          " -t nat -D CNIMESH-OUT-net1 -m owner --uid-owner 2102 -m comment --comment cnimesh/net1/ignore-proxy-uid -j "
          "RETURN",
      ipt + " -t nat -D CNIMESH-IN-net1 1");
  INFO(backend_name(backend) << ": " << deletion);
  TestNetns ns;
  SCOPING_SKIP_UNLESS_USABLE(ns, backend);
  build_pod(ns);
  netlink::RealNetOps ops(ns.path());
  IptablesRunnerPool pool = IptablesRunnerPool::real(ns.path());
  ScopingEnv env{ops, pool};
  const Json state = scoping::apply_scoping(env, plan_for(backend), net1_result());
  REQUIRE(scoping::check_scoping(env, state).empty());
  const CommandResult r = ns.run(deletion);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK_FALSE(scoping::check_scoping(env, state).empty());
  const Json repaired = scoping::apply_scoping(env, plan_for(backend), net1_result());
  CHECK(scoping::check_scoping(env, repaired).empty());
}

TEST_CASE("DEL twice leaves nothing, also without the applied state", "[scoping][netns]") {
  const Backend backend = GENERATE(Backend::Nft, Backend::Legacy);
  INFO(backend_name(backend));
  TestNetns ns;
  SCOPING_SKIP_UNLESS_USABLE(ns, backend);
  build_pod(ns);
  netlink::RealNetOps ops(ns.path());
  IptablesRunnerPool pool = IptablesRunnerPool::real(ns.path());
  ScopingEnv env{ops, pool};
  const std::string main_before = main_text(ns);
  const std::string rules_before = rules_text(ns);
  const std::string nat_before = nat_text(ns, backend);
  const cni::Result result = net1_result();

  const Json state = scoping::apply_scoping(env, plan_for(backend), result);
  scoping::remove_scoping(env, state, "net1", &result);
  scoping::remove_scoping(env, state, "net1", &result);
  CHECK(rules_text(ns) == rules_before);
  CHECK(table_text(ns, 1000).empty());
  CHECK(table_text(ns, 1001).empty());
  CHECK(main_text(ns) == main_before);
  CHECK(nat_text(ns, backend) == nat_before);
  CHECK_FALSE(has(nat_text(ns, backend), "CNIMESH"));

  // Only the plan was cached (the ADD died after the delegate) and the link is gone already.
  (void)scoping::apply_scoping(env, plan_for(backend), result);
  REQUIRE(ns.run("ip link del net1").rc == 0);
  scoping::remove_scoping(env, scoping::initial_scoping_state(plan_for(backend)), "net1", &result);
  CHECK_FALSE(has(rules_text(ns), "30000:"));
  CHECK_FALSE(has(nat_text(ns, backend), "CNIMESH"));
}
