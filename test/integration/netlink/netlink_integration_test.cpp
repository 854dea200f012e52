// Integration tests for lib/netlink against the real kernel (root only). Every test case creates
// its own namespace `mfnl-<pid>-<n>` holding a veth pair (mf0 192.0.2.2/24 + 2001:db8:1::2/64, mf1
// 198.51.100.2/24 + 2001:db8:2::2/64, both up), and an RAII fixture deletes it even when a check
// fails. The tests cover entering/restoring namespaces, namespace validation, link and address
// queries, routes in table 1000, rules at priority 30000, the free-table search, the default-route
// helpers, and — by replaying one scenario on RealNetOps and on a FakeNetOps seeded identically —
// that the fake reports exactly what the kernel reports.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cni/error.h"
#include "netlink/fake_net_ops.h"
#include "netlink/link.h"
#include "netlink/netns.h"
#include "netlink/nl_socket.h"
#include "netlink/real_net_ops.h"
#include "root_skip.h"
#include "net_specs.h"

using namespace manifold::netlink;
using manifold::cni::CniError;
using manifold::test::cidr;
using manifold::test::ip;
using manifold::test::route;
using manifold::test::rule;
using manifold::test::text;

namespace {

// Runs a shell command, returns its combined output; throws with the output when it fails.
std::string sh(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen((command + " 2>&1").c_str(), "r"), ::pclose);
  if (!pipe) throw std::runtime_error("popen failed: " + command);
  std::string output;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe.get()) != nullptr) output += buf.data();
  const int status = ::pclose(pipe.release());
  if (status != 0) throw std::runtime_error("`" + command + "` failed: " + output);
  return output;
}

// True when namespaces can be created here (root and a working `ip netns`).
bool netns_available() {
  static const bool available = [] {
    if (::geteuid() != 0) return false;
    const std::string probe = "mfnl-" + std::to_string(::getpid()) + "-probe";
    if (std::system(("ip netns add " + probe + " >/dev/null 2>&1").c_str()) != 0) return false;
    return std::system(("ip netns del " + probe + " >/dev/null 2>&1").c_str()) == 0;
  }();
  return available;
}

#define SKIP_WITHOUT_NETNS()                                                       \
  do {                                                                             \
    if (!netns_available()) ITEST_SKIP("needs root and a working `ip netns add`"); \
  } while (false)

// A fresh namespace with a veth pair; deleted (with everything in it) on destruction.
class TestNetns {
 public:
  TestNetns() : name_("mfnl-" + std::to_string(::getpid()) + "-" + std::to_string(++counter_)) {
    sh("ip netns add " + name_);
    try {
      ip("link set lo up");
      ip("link add mf0 type veth peer name mf1");
      ip("addr add 192.0.2.2/24 dev mf0");
      ip("addr add 2001:db8:1::2/64 dev mf0 nodad");
      ip("addr add 198.51.100.2/24 dev mf1");
      ip("addr add 2001:db8:2::2/64 dev mf1 nodad");
      ip("link set mf0 up");
      ip("link set mf1 up");
      mf0_ = ifindex("mf0");
      mf1_ = ifindex("mf1");
    } catch (...) {
      remove();
      throw;
    }
  }
  ~TestNetns() { remove(); }
  TestNetns(const TestNetns&) = delete;
  TestNetns& operator=(const TestNetns&) = delete;

  std::string path() const { return "/run/netns/" + name_; }
  std::string ip(const std::string& args) const { return sh("ip -n " + name_ + " " + args); }
  int mf0() const { return mf0_; }
  int mf1() const { return mf1_; }
  /// Deletes the namespace now (for tests of a vanished namespace).
  void remove() noexcept { (void)std::system(("ip netns del " + name_ + " >/dev/null 2>&1").c_str()); }

 private:
  int ifindex(const std::string& dev) const { return std::stoi(ip("-o link show dev " + dev)); }

  static inline int counter_ = 0;
  std::string name_;
  int mf0_ = 0;
  int mf1_ = 0;
};

bool has_address(const std::vector<AddressInfo>& list, const AddressInfo& wanted) {
  return std::find(list.begin(), list.end(), wanted) != list.end();
}

std::vector<RouteSpec> default_routes(NetOps& ops, int family) {
  std::vector<RouteSpec> out;
  for (const RouteSpec& r : ops.list_routes(family, kMainTable)) {
    if (!r.dst) out.push_back(r);
  }
  return out;
}

bool is_link_local_route(const RouteSpec& r) { return text(r.dst).rfind("fe80:", 0) == 0; }

}  // namespace

TEST_CASE("NetnsGuard enters a namespace and restores the thread's own", "[netlink][integration]") {
  SKIP_WITHOUT_NETNS();
  TestNetns ns;
  const NetnsFile target = NetnsFile::open(ns.path());
  const NetnsFile before = NetnsFile::current();
  REQUIRE_FALSE(before.same_namespace(target));
  {
    NetnsGuard guard(target);
    CHECK(NetnsFile::current().same_namespace(target));
    NlSocket inside;
    CHECK(find_link(inside, "mf0").has_value());
  }
  CHECK(NetnsFile::current().same_namespace(before));

  // Restored when the scoped function throws.
  CHECK_THROWS_AS(with_netns(target, []() -> int { throw std::runtime_error("boom"); }), std::runtime_error);
  CHECK(NetnsFile::current().same_namespace(before));

  // A socket stays bound to the namespace it was created in, wherever the thread goes afterwards.
  NlSocket pod_socket = with_netns(target, [] { return NlSocket("netns test"); });
  CHECK(NetnsFile::current().same_namespace(before));
  const std::optional<LinkInfo> mf0 = find_link(pod_socket, "mf0");
  REQUIRE(mf0);
  CHECK(mf0->index == ns.mf0());
  NlSocket host_socket;
  CHECK_FALSE(find_link(host_socket, "mf0").has_value());
}

TEST_CASE("NetnsFile: missing paths, vanished namespaces and non-namespace files", "[netlink][integration]") {
  SKIP_WITHOUT_NETNS();
  const std::string missing = "/run/netns/mfnl-" + std::to_string(::getpid()) + "-missing";
  CHECK_THROWS_AS(NetnsFile::open(missing), NetnsNotFound);
  CHECK_THROWS_AS(RealNetOps(missing), NetnsNotFound);
  CHECK_FALSE(NetnsFile::open_if_exists(missing).has_value());

  std::string path;
  {
    TestNetns ns;
    path = ns.path();
    CHECK(NetnsFile::open_if_exists(path).has_value());
  }
  CHECK_THROWS_AS(RealNetOps(path), NetnsNotFound);  // deleted like a finished pod's namespace

  char name[] = "/tmp/mfnl-int-XXXXXX";
  const int fd = ::mkstemp(name);
  REQUIRE(fd >= 0);
  ::close(fd);
  const std::string file = name;
  try {
    RealNetOps ops(file);
    FAIL("a regular file was accepted");
  } catch (const NotANetns& e) {
    CHECK(e.msg() == file + " is not a network namespace");
  }
  ::unlink(file.c_str());
}

TEST_CASE("link lookup and listing", "[netlink][integration]") {
  SKIP_WITHOUT_NETNS();
  TestNetns ns;
  RealNetOps ops(ns.path());
  CHECK(ops.netns_path() == ns.path());

  const std::optional<LinkInfo> mf0 = ops.find_link("mf0");
  REQUIRE(mf0);
  CHECK(mf0->index == ns.mf0());
  CHECK(mf0->name == "mf0");
  CHECK(mf0->kind == "veth");
  CHECK(mf0->up);
  CHECK(mf0->mtu == 1500);
  CHECK(mf0->mac.size() == 17);
  CHECK(ns.ip("link show dev mf0").find(mf0->mac) != std::string::npos);

  CHECK_FALSE(ops.find_link("net1").has_value());
  CHECK(ops.is_ifname_free("net1"));
  CHECK_FALSE(ops.is_ifname_free("mf1"));
  CHECK_THROWS_AS(ops.find_link("bad/name"), CniError);

  const std::vector<LinkInfo> links = ops.list_links();
  REQUIRE(links.size() == 3);
  CHECK(links[0].name == "lo");
  CHECK(links[0].kind.empty());
  CHECK(std::is_sorted(links.begin(), links.end(),
                       [](const LinkInfo& a, const LinkInfo& b) { return a.index < b.index; }));
  CHECK(std::count_if(links.begin(), links.end(), [&](const LinkInfo& l) { return l == *mf0; }) == 1);

  ns.ip("link set mf1 down");
  CHECK_FALSE(ops.find_link("mf1")->up);
}

TEST_CASE("a link lookup leaves nothing on the socket for the next request", "[netlink][integration]") {
  SKIP_WITHOUT_NETNS();
  TestNetns ns;
  RealNetOps ops(ns.path());
  for (int round = 0; round < 3; ++round) {
    CHECK_FALSE(ops.find_link("net1").has_value());  // answered by an error alone
    CHECK(ops.list_links().size() == 3);
    CHECK(ops.find_link("mf0")->index == ns.mf0());  // answered by the link, then an ACK
    CHECK(ops.list_links().size() == 3);
    CHECK(has_address(ops.list_addresses(ns.mf0()), AddressInfo{AF_INET, ns.mf0(), cidr("192.0.2.2/24")}));
    CHECK(ops.find_link("mf1")->index == ns.mf1());
    CHECK(ops.find_link("mf1")->index == ns.mf1());
    CHECK_FALSE(ops.find_link("net1").has_value());
    CHECK_FALSE(ops.find_link("net2").has_value());
    CHECK(ops.list_addresses().size() >= 4);
  }
  // The kernel finds a link by an alternative name too; the interface of that name does not exist.
  ns.ip("link property add dev mf1 altname mfalt");
  CHECK_FALSE(ops.find_link("mfalt").has_value());
  CHECK(ops.find_link("mf1")->name == "mf1");
  CHECK(ops.list_links().size() == 3);
}

TEST_CASE("address listing", "[netlink][integration]") {
  SKIP_WITHOUT_NETNS();
  TestNetns ns;
  RealNetOps ops(ns.path());
  const std::vector<AddressInfo> mf0 = ops.list_addresses(ns.mf0());
  CHECK(has_address(mf0, AddressInfo{AF_INET, ns.mf0(), cidr("192.0.2.2/24")}));
  CHECK(has_address(mf0, AddressInfo{AF_INET6, ns.mf0(), cidr("2001:db8:1::2/64")}));
  CHECK_FALSE(has_address(mf0, AddressInfo{AF_INET, ns.mf1(), cidr("198.51.100.2/24")}));
  CHECK(std::all_of(mf0.begin(), mf0.end(), [&](const AddressInfo& a) { return a.ifindex == ns.mf0(); }));
  CHECK(mf0.front().family == AF_INET);  // IPv4 first

  const std::vector<AddressInfo> all = ops.list_addresses();
  CHECK(has_address(all, AddressInfo{AF_INET, ns.mf1(), cidr("198.51.100.2/24")}));
  CHECK(has_address(all, AddressInfo{AF_INET, 1, cidr("127.0.0.1/8")}));
  CHECK(has_address(all, AddressInfo{AF_INET6, 1, cidr("::1/128")}));

  ns.ip("addr add 192.0.2.77/32 dev mf0");
  CHECK(has_address(ops.list_addresses(ns.mf0()), AddressInfo{AF_INET, ns.mf0(), cidr("192.0.2.77/32")}));
}

TEST_CASE("routes in table 1000: copy, add, duplicate, delete twice", "[netlink][integration]") {
  SKIP_WITHOUT_NETNS();
  TestNetns ns;
  RealNetOps ops(ns.path());
  const int table = 1000;

  std::vector<RouteSpec> copies;
  for (const RouteSpec& r : ops.list_routes(AF_UNSPEC, kMainTable)) {
    if (r.ifindex != ns.mf0() || is_link_local_route(r)) continue;
    RouteSpec copy = r;
    copy.table = table;
    REQUIRE(ops.add_route(copy) == AddOutcome::Added);
    copies.push_back(copy);
  }
  REQUIRE(copies.size() == 2);  // 192.0.2.0/24 and 2001:db8:1::/64
  const RouteSpec v4_default = route("", "192.0.2.1", ns.mf0(), table);
  const RouteSpec v6_default = route("", "2001:db8:1::1", ns.mf0(), table);
  CHECK(ops.add_route(v4_default) == AddOutcome::Added);
  CHECK(ops.add_route(v6_default) == AddOutcome::Added);
  CHECK(ops.add_route(v4_default) == AddOutcome::Exists);
  CHECK(ops.add_route(route("0.0.0.0/0", "198.51.100.1", ns.mf1(), table)) == AddOutcome::Exists);

  // The kernel reports copies verbatim and new routes as route_as_added() predicts.
  const std::vector<RouteSpec> v4 = ops.list_routes(AF_INET, table);
  const std::vector<RouteSpec> v6 = ops.list_routes(AF_INET6, table);
  REQUIRE(v4.size() == 2);
  REQUIRE(v6.size() == 2);
  CHECK(std::count(v4.begin(), v4.end(), copies[0]) == 1);
  CHECK(std::count(v6.begin(), v6.end(), copies[1]) == 1);
  CHECK(std::count(v4.begin(), v4.end(), route_as_added(normalize_route(v4_default))) == 1);
  CHECK(std::count(v6.begin(), v6.end(), route_as_added(normalize_route(v6_default))) == 1);
  CHECK(ns.ip("-d route show table 1000").find("unicast default via 192.0.2.1 dev mf0 proto boot scope global") !=
        std::string::npos);
  CHECK(ns.ip("-d -6 route show table 1000")
            .find("unicast default via 2001:db8:1::1 dev mf0 proto boot scope global metric 1024") !=
        std::string::npos);
  CHECK(ops.list_routes(AF_UNSPEC, kAllTables).size() > 4);

  CHECK(ops.delete_route(v4_default) == DeleteOutcome::Deleted);
  CHECK(ops.delete_route(v4_default) == DeleteOutcome::NotFound);
  CHECK(ops.delete_route(v6_default) == DeleteOutcome::Deleted);
  CHECK(ops.delete_route(v6_default) == DeleteOutcome::NotFound);
  CHECK(ops.delete_route(route("10.77.0.0/16", "", 9999, table)) == DeleteOutcome::NotFound);
  CHECK(ops.delete_route(route("10.77.0.0/16", "", 0, 4242)) == DeleteOutcome::NotFound);  // no such table
  for (const RouteSpec& copy : copies) CHECK(ops.delete_route(copy) == DeleteOutcome::Deleted);
  CHECK(ops.list_routes(AF_UNSPEC, table).empty());
  CHECK(ns.ip("route show table 1000").empty());

  // Main is untouched by all of this.
  CHECK(ns.ip("route show").find("192.0.2.0/24 dev mf0 proto kernel scope link src 192.0.2.2") != std::string::npos);
}

TEST_CASE("rules at priority 30000: add, duplicate, delete twice", "[netlink][integration]") {
  SKIP_WITHOUT_NETNS();
  TestNetns ns;
  RealNetOps ops(ns.path());
  const RuleSpec v4 = rule("192.0.2.2/32", 1000, 30000);
  const RuleSpec v6 = rule("2001:db8:1::2/128", 1000, 30000);
  CHECK(ops.add_rule(v4) == AddOutcome::Added);
  CHECK(ops.add_rule(v4) == AddOutcome::Exists);
  CHECK(ops.add_rule(v6) == AddOutcome::Added);
  CHECK(ops.add_rule(v6) == AddOutcome::Exists);
  CHECK(ns.ip("rule show").find("30000:\tfrom 192.0.2.2 lookup 1000") != std::string::npos);

  const std::vector<RuleSpec> rules4 = ops.list_rules(AF_INET);
  REQUIRE(rules4.size() == 4);  // local, ours, main, default
  CHECK(rules4[1] == normalize_rule(v4));
  CHECK(rules4[2] == normalize_rule(rule("0.0.0.0/0", kMainTable, 32766)));
  CHECK(ops.list_rules(AF_INET6).at(1) == normalize_rule(v6));

  // Rules with selectors a RuleSpec cannot express are not listed as ours.
  ns.ip("rule add from 192.0.2.2 fwmark 0x7 lookup 1000 priority 30000");
  ns.ip("rule add iif mf1 lookup 1001 priority 30001");
  CHECK(ops.list_rules(AF_INET).size() == 4);

  CHECK(ops.delete_rule(v4) == DeleteOutcome::Deleted);
  CHECK(ops.delete_rule(v6) == DeleteOutcome::Deleted);
  CHECK(ops.delete_rule(v6) == DeleteOutcome::NotFound);
  CHECK(ns.ip("-6 rule show").find("30000:") == std::string::npos);

  // Without a priority the kernel picks one below the family's second rule (main's here), as
  // FakeNetOps predicts.
  ns.ip("rule del priority 30000");
  ns.ip("rule del priority 30001");
  CHECK(ops.add_rule(rule("192.0.2.9/32", 1000, kRulePriorityAuto)) == AddOutcome::Added);
  CHECK(ops.list_rules(AF_INET).at(1).priority == 32765);
  CHECK(ops.delete_rule(rule("192.0.2.9/32", 1000, kRulePriorityAuto)) == DeleteOutcome::Deleted);
}

TEST_CASE("free table search skips tables used by rules and by routes of any kind", "[netlink][integration]") {
  SKIP_WITHOUT_NETNS();
  TestNetns ns;
  RealNetOps ops(ns.path());
  CHECK(ops.find_free_table(1000) == 1000);
  CHECK(ops.add_rule(rule("192.0.2.2/32", 1000, 30000)) == AddOutcome::Added);
  CHECK(ops.find_free_table(1000) == 1001);
  CHECK(ops.add_route(route("", "2001:db8:1::1", ns.mf0(), 1001)) == AddOutcome::Added);
  CHECK(ops.find_free_table(1000) == 1002);
  ns.ip("route add unreachable 10.99.0.0/16 table 1002");  // not listable as a RouteSpec, still
                                                           // "used"
  CHECK(ops.list_routes(AF_INET, 1002).empty());
  CHECK(ops.find_free_table(1000) == 1003);
  ns.ip("rule add fwmark 0x9 lookup 1003 priority 100");
  CHECK(ops.find_free_table(1000) == 1004);
  CHECK(ops.find_free_table(250) == 250);
  CHECK(ops.find_free_table(253) == 256);
}

TEST_CASE("default-route helpers for IPv4 and IPv6", "[netlink][integration]") {
  SKIP_WITHOUT_NETNS();
  TestNetns ns;
  RealNetOps ops(ns.path());
  CHECK(ops.add_default_route(AF_INET, ip("192.0.2.1"), ns.mf0()) == AddOutcome::Added);
  CHECK(ops.add_default_route(AF_INET, ip("192.0.2.1"), ns.mf0()) == AddOutcome::Exists);
  CHECK(ops.add_default_route(AF_INET6, ip("2001:db8:1::1"), ns.mf0()) == AddOutcome::Added);
  CHECK(ns.ip("route show default").find("default via 192.0.2.1 dev mf0") != std::string::npos);

  // Select mf1 for IPv4: the default through mf0 goes, IPv6 is untouched.
  const std::vector<RouteSpec> removed = ops.delete_default_routes(AF_INET, ns.mf1());
  REQUIRE(removed.size() == 1);
  CHECK(text(removed[0].gw) == "192.0.2.1");
  CHECK(removed[0].ifindex == ns.mf0());
  CHECK(ops.add_default_route(AF_INET, ip("198.51.100.1"), ns.mf1()) == AddOutcome::Added);
  REQUIRE(default_routes(ops, AF_INET).size() == 1);
  CHECK(default_routes(ops, AF_INET)[0].ifindex == ns.mf1());
  CHECK(ops.delete_default_routes(AF_INET, ns.mf1()).empty());
  REQUIRE(default_routes(ops, AF_INET6).size() == 1);
  CHECK(text(default_routes(ops, AF_INET6)[0].gw) == "2001:db8:1::1");

  // IPv6 selection, then removal of every default of a family.
  CHECK(ops.delete_default_routes(AF_INET6, ns.mf1()).size() == 1);
  CHECK(ops.add_default_route(AF_INET6, ip("2001:db8:2::1"), ns.mf1()) == AddOutcome::Added);
  CHECK(default_routes(ops, AF_INET6).at(0).ifindex == ns.mf1());
  CHECK(ops.delete_default_routes(AF_INET6, 0).size() == 1);
  CHECK(default_routes(ops, AF_INET6).empty());
  CHECK(ns.ip("-6 route show default").empty());

  // Rollback: what was removed can be put back verbatim.
  CHECK(ops.delete_default_routes(AF_INET, 0).size() == 1);
  for (const RouteSpec& r : removed) CHECK(ops.add_route(r) == AddOutcome::Added);
  CHECK(default_routes(ops, AF_INET) == removed);
}

TEST_CASE("default routes of one metric on two interfaces are listed and deleted one by one",
          "[netlink][integration]") {
  // libnl names a route by family, tos, table, destination and priority: a de-duplicating dump
  // kept one of these (IPv4) or merged them into one multipath route (IPv6), so the other was never
  // listed, and a pod asking for no default route kept it.
  SKIP_WITHOUT_NETNS();
  TestNetns ns;
  RealNetOps ops(ns.path());
  ns.ip("route append default via 192.0.2.1 dev mf0");
  ns.ip("route append default via 198.51.100.1 dev mf1");
  ns.ip("-6 route append default via 2001:db8:1::1 dev mf0");
  ns.ip("-6 route append default via 2001:db8:2::1 dev mf1");
  for (int family : {AF_INET, AF_INET6}) {
    const std::vector<RouteSpec> listed = default_routes(ops, family);
    REQUIRE(listed.size() == 2);
    CHECK(listed[0].ifindex != listed[1].ifindex);
    CHECK(ops.delete_default_routes(family, 0).size() == 2);
    CHECK(default_routes(ops, family).empty());
  }
  CHECK(ns.ip("route show default").empty());
  CHECK(ns.ip("-6 route show default").empty());
}

TEST_CASE("kernel errors map to CniError(Netlink) exactly as the fake maps them", "[netlink][integration]") {
  SKIP_WITHOUT_NETNS();
  TestNetns ns;
  RealNetOps real(ns.path());
  auto state = std::make_shared<FakeNetnsState>();
  state->links = real.list_links();
  state->add_address(ns.mf0(), "192.0.2.2/24");
  FakeNetOps fake(state, ns.path());

  auto message = [](NetOps& ops, const RouteSpec& r) {
    try {
      (void)ops.add_route(r);
    } catch (const CniError& e) {
      CHECK(e.code() == 105);
      return e.msg() + " | " + e.details();
    }
    return std::string("ok");
  };
  const RouteSpec no_device = route("10.50.0.0/16", "", 9999, 1000);
  CHECK(message(real, no_device) ==
        "netlink: add route 10.50.0.0/16 dev #9999 table 1000: No such device | netns " + ns.path());
  CHECK(message(fake, no_device) == message(real, no_device));
  ns.ip("link add dn0 type veth peer name dn1");
  ns.ip("addr add 10.0.0.2/24 dev dn0");
  const int dn0 = real.find_link("dn0")->index;
  state->links = real.list_links();
  state->add_address(dn0, "10.0.0.2/24");
  for (const RouteSpec& r :
       {route("10.50.0.0/16", "172.16.0.1", ns.mf0(), 1000),  // IPv4 gateway not on the link
        route("10.50.0.0/16", "172.16.0.1", 0, 1000),         // ... and no device to resolve it
        route("2001:db8:9::/64", "2001:db8:5::1", ns.mf0(), 1000), route("2001:db8:9::/64", "2001:db8:5::1", 0, 1000),
        route("2001:db8:9::/64", "fe80::1", 0, 1000),  // link-local needs a device
        route("10.6.0.0/16", "", dn0, 1000),           // device down
        route("10.6.0.0/16", "10.0.0.1", dn0, 1000), route("2001:db8:7::/64", "", dn0, 1000),
        route("2001:db8:7::/64", "fe80::1", dn0, 1000)}) {
    INFO(to_string(r));
    const std::string kernel = message(real, r);
    CHECK(kernel != "ok");
    CHECK(message(fake, r) == kernel);
  }
}

TEST_CASE("FakeNetOps replays a scoping scenario exactly like the kernel", "[netlink][integration]") {
  SKIP_WITHOUT_NETNS();
  TestNetns ns;
  RealNetOps real(ns.path());
  auto state = FakeNetnsState::with_defaults();
  state->links = real.list_links();
  for (const char* cidr : {"192.0.2.2/24", "2001:db8:1::2/64"}) state->add_address(ns.mf0(), cidr);
  for (const char* cidr : {"198.51.100.2/24", "2001:db8:2::2/64"}) state->add_address(ns.mf1(), cidr);
  FakeNetOps fake(state, ns.path());

  // Source routing for mf0, default-route selection of mf1, then teardown; returns a transcript.
  auto scenario = [&](NetOps& ops) {
    std::vector<std::string> log;
    const int table = ops.find_free_table(1000);
    log.push_back("table " + std::to_string(table));
    for (const RouteSpec& r : ops.list_routes(AF_UNSPEC, kMainTable)) {
      if (r.ifindex != ns.mf0() || is_link_local_route(r)) continue;
      RouteSpec copy = r;
      copy.table = table;
      log.push_back("copy " + to_string(copy) + ": " + std::string(to_string(ops.add_route(copy))));
    }
    for (const RouteSpec& r : {route("", "192.0.2.1", ns.mf0(), table), route("", "2001:db8:1::1", ns.mf0(), table)}) {
      log.push_back("add " + to_string(r) + ": " + std::string(to_string(ops.add_route(r))));
      log.push_back("again: " + std::string(to_string(ops.add_route(r))));
    }
    for (const RuleSpec& r : {rule("192.0.2.2/32", table, 30000), rule("2001:db8:1::2/128", table, 30000)}) {
      log.push_back("rule " + to_string(r) + ": " + std::string(to_string(ops.add_rule(r))));
      log.push_back("again: " + std::string(to_string(ops.add_rule(r))));
    }
    log.push_back("next table " + std::to_string(ops.find_free_table(1000)));
    log.push_back("v4 default: " + std::string(to_string(ops.add_default_route(AF_INET, ip("192.0.2.1"), ns.mf0()))));
    log.push_back("removed " + std::to_string(ops.delete_default_routes(AF_INET, ns.mf1()).size()));
    log.push_back("v4 default: " +
                  std::string(to_string(ops.add_default_route(AF_INET, ip("198.51.100.1"), ns.mf1()))));
    std::vector<std::string> listed;  // the kernel lists in trie order, the fake in insertion order
    for (const RouteSpec& r : ops.list_routes(AF_UNSPEC, table)) listed.push_back("listed " + to_string(r));
    std::sort(listed.begin(), listed.end());
    log.insert(log.end(), listed.begin(), listed.end());
    for (const RouteSpec& r : default_routes(ops, AF_INET)) log.push_back("main " + to_string(r));
    for (const RuleSpec& r : ops.list_rules(AF_UNSPEC)) log.push_back("rule " + to_string(r));
    for (const RuleSpec& r : {rule("192.0.2.2/32", table, 30000), rule("2001:db8:1::2/128", table, 30000)}) {
      log.push_back("delete " + std::string(to_string(ops.delete_rule(r))));
      log.push_back("delete again " + std::string(to_string(ops.delete_rule(r))));
    }
    for (const RouteSpec& r : ops.list_routes(AF_UNSPEC, table)) {
      log.push_back("delete " + std::string(to_string(ops.delete_route(r))));
    }
    log.push_back("left " + std::to_string(ops.list_routes(AF_UNSPEC, table).size()));
    return log;
  };
  const std::vector<std::string> kernel = scenario(real);
  const std::vector<std::string> modelled = scenario(fake);
  CHECK(kernel == modelled);
  CHECK(kernel.size() > 20);
}
