// Unit tests for lib/scoping/source_routing against FakeNetOps: the layered config and every
// validation error, golden routing plans for the reference topology (IPv4 and IPv6), table
// picking, gateway precedence, apply (main untouched, self-rollback), re-apply idempotency,
// remove with and without a state, CHECK failures, and the state codec.
#include "scoping/source_routing.h"

#include <sys/socket.h>

#include <netlink/errno.h>

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
using manifold::test::cidr;
using manifold::test::code_of;
using manifold::test::ip;
using manifold::test::text;

namespace {

// The routed pod (eth0 with the default route, net1 with an IPAM route), journal cleared.
struct Pod : test::RoutedFakePod {
  Pod() { state->journal.clear(); }

  std::vector<RouteSpec> table(int id, int family = AF_UNSPEC) { return ops.list_routes(family, id); }
  std::vector<RuleSpec> rules_at(int priority) {
    std::vector<RuleSpec> out;
    for (const RuleSpec& r : ops.list_rules(AF_UNSPEC))
      if (r.priority == priority) out.push_back(r);
    return out;
  }
};

SourceRoutingConfig enabled(const char* extra = "{}") {
  Json j = Json::parse(extra);
  j["enabled"] = true;
  return parse_source_routing_config(j);
}

const std::vector<AttachmentAddress> kNet1{{"192.168.10.5/24", "192.168.10.1"}};

}  // namespace

// ---- config ----

TEST_CASE("source routing config: defaults and canonical form", "[netlink]") {
  const SourceRoutingConfig cfg = parse_source_routing_config(nullptr);
  CHECK_FALSE(cfg.enabled);
  CHECK(cfg.table == 0);
  CHECK(cfg.table_base == 1000);
  CHECK(cfg.rule_priority == 30000);
  CHECK(cfg.to_json().dump() == R"({"enabled":false,"table":0,"tableBase":1000,"rulePriority":30000,"gateways":[]})");
  const SourceRoutingConfig full = parse_source_routing_config(Json::parse(
      R"({"enabled":true,"table":7,"tableBase":5,"rulePriority":100,"gateways":["2001:DB8::1","10.0.0.1"]})"));
  CHECK(text(full.gateway_v4) == "10.0.0.1");
  CHECK(text(full.gateway_v6) == "2001:db8::1");
  CHECK(parse_source_routing_config(full.to_json()) == full);
  // null means "this key's default"
  CHECK(parse_source_routing_config(Json::parse(R"({"tableBase":null,"enabled":null})")) == cfg);
}

TEST_CASE("source routing config: later layers win per key", "[netlink]") {
  const Json top = Json::parse(R"({"enabled":true,"tableBase":2000,"rulePriority":100})");
  const Json delegate = Json::parse(R"({"tableBase":3000})");
  const Json args = Json::parse(R"({"rulePriority":200,"enabled":false})");
  const SourceRoutingConfig cfg = merge_source_routing_layers(top, delegate, args);
  CHECK_FALSE(cfg.enabled);       // pod wins over top
  CHECK(cfg.table_base == 3000);  // delegate wins over top
  CHECK(cfg.rule_priority == 200);
  const SourceRoutingConfig only_top = merge_source_routing_layers(top, nullptr, nullptr);
  CHECK(only_top.enabled);
  CHECK(only_top.table_base == 2000);
  CHECK(merge_source_routing_layers(nullptr, Json::object(), nullptr) == SourceRoutingConfig{});
}

TEST_CASE("source routing config: every bad field is error 7 naming it", "[netlink]") {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"enabled":"yes"})", "sourceRouting.enabled"},
      {R"({"table":254})", "sourceRouting.table"},
      {R"({"table":-1})", "sourceRouting.table"},
      {R"({"table":"1000"})", "sourceRouting.table"},
      {R"({"table":2147483648})", "sourceRouting.table"},
      {R"({"tableBase":0})", "sourceRouting.tableBase"},
      {R"({"tableBase":1.5})", "sourceRouting.tableBase"},
      {R"({"rulePriority":0})", "sourceRouting.rulePriority"},
      {R"({"rulePriority":32766})", "sourceRouting.rulePriority"},
      {R"({"gateways":"10.0.0.1"})", "sourceRouting.gateways"},
      {R"({"gateways":["10.0.0.1","10.0.0.2"]})", "sourceRouting.gateways"},
      {R"({"gateways":["10.0.0.1/24"]})", "sourceRouting.gateways"},
      {R"({"gateways":["fe80::1%eth0"]})", "sourceRouting.gateways"},
      {R"({"gateways":[1]})", "sourceRouting.gateways"},
      {R"({"tabel":1000})", "sourceRouting.tabel"},
  };
  for (const auto& [text, field] : cases) {
    INFO(text);
    std::string msg;
    CHECK(code_of([t = text] { (void)parse_source_routing_config(Json::parse(t)); }, &msg) == 7);
    CHECK(msg.find(field) != std::string::npos);
  }
  std::string msg;
  CHECK(code_of([&] { (void)merge_source_routing_layers(nullptr, Json::array(), nullptr); }, &msg) == 7);
  CHECK(msg.find("network config") != std::string::npos);
  CHECK(code_of([&] { (void)merge_source_routing_layers(nullptr, nullptr, "on"); }, &msg) == 7);
  CHECK(msg.find("pod cni-args") != std::string::npos);
}

// ---- plan ----

TEST_CASE("source routing plan: golden plan for the reference topology", "[netlink]") {
  Pod pod;
  const SourceRoutingPlan plan = plan_source_routing(pod.ops, enabled(), "net1", kNet1);
  CHECK(plan.ifindex == pod.net1);
  CHECK(plan.picked_tables);
  CHECK(describe(plan) == std::vector<std::string>{
                              "table 1000 for 192.168.10.5",
                              "route 192.168.10.0/24 dev #3 table 1000 proto kernel scope link src 192.168.10.5",
                              "route 192.168.20.0/24 via 192.168.10.1 dev #3 table 1000 proto boot",
                              "route default via 192.168.10.1 dev #3 table 1000 proto boot",
                              "rule 30000: from 192.168.10.5/32 lookup 1000",
                          });
  CHECK(pod.state->journal.empty());  // planning changes nothing
}

TEST_CASE("source routing plan: golden IPv6 plan (link-local IPs are skipped)", "[netlink]") {
  Pod pod;
  pod.state->add_address(pod.net1, "2001:db8:10::5/64");
  pod.state->add_address(pod.net1, "fe80::5/64");
  const SourceRoutingPlan plan =
      plan_source_routing(pod.ops, enabled(), "net1", {{"2001:db8:10::5/64", "2001:db8:10::1"}, {"fe80::5/64", ""}});
  CHECK(describe(plan) == std::vector<std::string>{
                              "table 1000 for 2001:db8:10::5",
                              "route 2001:db8:10::/64 dev #3 table 1000 proto kernel metric 256",
                              "route fe80::/64 dev #3 table 1000 proto kernel metric 256",
                              "route default via 2001:db8:10::1 dev #3 table 1000 proto boot metric 1024",
                              "rule 30000: from 2001:db8:10::5/128 lookup 1000",
                          });
}

TEST_CASE("source routing plan: tables are picked per IP, or configured", "[netlink]") {
  Pod pod;
  pod.state->add_address(pod.net1, "192.168.11.5/24");
  pod.state->extra_tables = {1000};  // used by something the specs cannot describe
  const std::vector<AttachmentAddress> two{{"192.168.10.5/24", ""}, {"192.168.11.5/24", ""}};
  const SourceRoutingPlan picked = plan_source_routing(pod.ops, enabled(), "net1", two);
  REQUIRE(picked.tables.size() == 2);
  CHECK(picked.tables[0].table == 1001);
  CHECK(picked.tables[1].table == 1002);
  // Each IP's table holds the routes of its own subnet only (preferred source / gateway).
  CHECK(describe(picked) == std::vector<std::string>{
                                "table 1001 for 192.168.10.5",
                                "route 192.168.10.0/24 dev #3 table 1001 proto kernel scope link src 192.168.10.5",
                                "route 192.168.20.0/24 via 192.168.10.1 dev #3 table 1001 proto boot",
                                "rule 30000: from 192.168.10.5/32 lookup 1001",
                                "table 1002 for 192.168.11.5",
                                "route 192.168.11.0/24 dev #3 table 1002 proto kernel scope link src 192.168.11.5",
                                "rule 30000: from 192.168.11.5/32 lookup 1002",
                            });
  const SourceRoutingPlan configured =
      plan_source_routing(pod.ops, enabled(R"({"table":77,"rulePriority":100})"), "net1", two);
  CHECK_FALSE(configured.picked_tables);
  CHECK(configured.tables[0].table == 77);
  CHECK(configured.tables[1].table == 77);
  CHECK(configured.tables[1].rule.priority == 100);
  CHECK(plan_source_routing(pod.ops, enabled(R"({"tableBase":5000})"), "net1", kNet1).tables[0].table == 5000);
}

TEST_CASE("source routing plan: configured gateways win and replace a copied default", "[netlink]") {
  Pod pod;
  RouteSpec def;
  def.gw = ip("192.168.10.254");
  def.ifindex = pod.net1;
  def.priority = 50;
  REQUIRE(pod.ops.add_route(def) == AddOutcome::Added);  // a second default, via net1
  const SourceRoutingPlan plan =
      plan_source_routing(pod.ops, enabled(R"({"gateways":["192.168.10.9"]})"), "net1", kNet1);
  const std::vector<std::string> lines = describe(plan);
  CHECK(std::count(lines.begin(), lines.end(), "route default via 192.168.10.9 dev #3 table 1000 proto boot") == 1);
  for (const std::string& line : lines) CHECK(line.find("192.168.10.254") == std::string::npos);
  // Without any gateway the copied default stays.
  const SourceRoutingPlan copied = plan_source_routing(pod.ops, enabled(), "net1", {{"192.168.10.5/24", ""}});
  const std::vector<std::string> copied_lines = describe(copied);
  CHECK(std::count(copied_lines.begin(), copied_lines.end(),
                   "route default via 192.168.10.254 dev #3 table 1000 proto boot metric 50") == 1);
}

TEST_CASE("source routing plan: bad input", "[netlink]") {
  Pod pod;
  CHECK(code_of([&] { (void)plan_source_routing(pod.ops, enabled(), "net9", kNet1); }) == 105);
  CHECK(code_of([&] { (void)plan_source_routing(pod.ops, enabled(), "net 1", kNet1); }) == 7);
  CHECK(code_of([&] { (void)plan_source_routing(pod.ops, enabled(), "net1", {{"garbage", ""}}); }) == 7);
  CHECK(code_of([&] {
          (void)plan_source_routing(pod.ops, enabled(), "net1", {{"192.168.10.5/24", "2001:db8::1"}});
        }) == 7);
  CHECK(plan_source_routing(pod.ops, enabled(), "net1", {}).tables.empty());
}

// ---- apply / remove / check ----

TEST_CASE("source routing apply: copies into the table, adds the rule, leaves main intact", "[netlink]") {
  Pod pod;
  const std::vector<RouteSpec> main_before = pod.table(kMainTable);
  const SourceRoutingState state =
      apply_source_routing(pod.ops, plan_source_routing(pod.ops, enabled(), "net1", kNet1));
  CHECK(pod.table(kMainTable) == main_before);
  CHECK(pod.table(1000).size() == 3);
  CHECK(state.routes == pod.table(1000));
  REQUIRE(pod.rules_at(30000).size() == 1);
  CHECK(to_string(pod.rules_at(30000)[0]) == "30000: from 192.168.10.5/32 lookup 1000");
  CHECK(state.ips == std::vector<std::string>{"192.168.10.5"});
  CHECK(state.tables == std::vector<int>{1000});
  CHECK(check_source_routing(pod.ops, state).empty());
}

TEST_CASE("source routing apply: a re-ADD changes nothing and reuses the table", "[netlink]") {
  Pod pod;
  const SourceRoutingState first =
      apply_source_routing(pod.ops, plan_source_routing(pod.ops, enabled(), "net1", kNet1));
  const auto routes = pod.state->routes;
  const auto rules = pod.state->rules;
  pod.state->journal.clear();
  const SourceRoutingPlan again = plan_source_routing(pod.ops, enabled(), "net1", kNet1);
  CHECK(again.tables.at(0).reused);
  const SourceRoutingState second = apply_source_routing(pod.ops, again);
  CHECK(second == first);
  CHECK(pod.state->routes == routes);
  CHECK(pod.state->rules == rules);
  CHECK(pod.state->journal.empty());
}

TEST_CASE("source routing apply: a re-ADD drops stale routes of its picked table", "[netlink]") {
  Pod pod;
  (void)apply_source_routing(pod.ops, plan_source_routing(pod.ops, enabled(), "net1", kNet1));
  RouteSpec stale;
  stale.dst = cidr("172.16.0.0/12");
  stale.gw = ip("192.168.10.1");
  stale.ifindex = pod.net1;
  stale.table = 1000;
  REQUIRE(pod.ops.add_route(stale) == AddOutcome::Added);
  const SourceRoutingState state =
      apply_source_routing(pod.ops, plan_source_routing(pod.ops, enabled(), "net1", kNet1));
  CHECK(pod.table(1000).size() == 3);
  CHECK(check_source_routing(pod.ops, state).empty());
}

TEST_CASE("source routing apply: a failure undoes everything this call added", "[netlink]") {
  Pod pod;
  const auto routes = pod.state->routes;
  const auto rules = pod.state->rules;
  const SourceRoutingPlan plan = plan_source_routing(pod.ops, enabled(), "net1", kNet1);
  pod.state->fail_next(FakeOp::AddRule, NLE_PERM);
  CHECK(code_of([&] { (void)apply_source_routing(pod.ops, plan); }) == 105);
  CHECK(pod.state->routes == routes);
  CHECK(pod.state->rules == rules);
  CHECK(pod.table(1000).empty());
}

TEST_CASE("source routing remove: idempotent, works when the link is gone", "[netlink]") {
  Pod pod;
  const auto main_before = pod.table(kMainTable);
  const SourceRoutingState state =
      apply_source_routing(pod.ops, plan_source_routing(pod.ops, enabled(), "net1", kNet1));
  remove_source_routing(pod.ops, state);
  CHECK(pod.rules_at(30000).empty());
  CHECK(pod.table(1000).empty());
  CHECK(pod.table(kMainTable) == main_before);
  pod.state->journal.clear();
  remove_source_routing(pod.ops, state);  // second DEL
  CHECK(pod.state->journal.empty());

  const SourceRoutingState again =
      apply_source_routing(pod.ops, plan_source_routing(pod.ops, enabled(), "net1", kNet1));
  pod.state->remove_link("net1");  // the table routes die with it, the rule does not
  CHECK(pod.rules_at(30000).size() == 1);
  remove_source_routing(pod.ops, again);
  CHECK(pod.rules_at(30000).empty());
}

TEST_CASE("source routing remove: without a state, from the attachment's IPs", "[netlink]") {
  Pod pod;
  pod.state->add_address(pod.eth0, "10.244.1.6/24");
  (void)apply_source_routing(pod.ops, plan_source_routing(pod.ops, enabled(), "net1", kNet1));
  // Someone else's rule at our priority, from another IP, must survive.
  RuleSpec other{AF_INET, cidr("10.244.1.6/32"), 500, 30000};
  REQUIRE(pod.ops.add_rule(other) == AddOutcome::Added);
  const auto main_before = pod.table(kMainTable);
  remove_source_routing_by_ips(pod.ops, "net1", 30000, {"192.168.10.5/24"});
  CHECK(pod.rules_at(30000) == std::vector<RuleSpec>{other});
  CHECK(pod.table(1000).empty());
  CHECK(pod.table(kMainTable) == main_before);
  pod.state->journal.clear();
  remove_source_routing_by_ips(pod.ops, "net1", 30000, {"192.168.10.5"});
  remove_source_routing_by_ips(pod.ops, "gone0", 30000, {"192.168.10.5"});
  remove_source_routing_by_ips(pod.ops, "net1", 30000, {});
  CHECK(pod.state->journal.empty());
}

TEST_CASE("source routing check: fails after each single deletion or change", "[netlink]") {
  Pod pod;
  const SourceRoutingState state =
      apply_source_routing(pod.ops, plan_source_routing(pod.ops, enabled(), "net1", kNet1));
  REQUIRE(check_source_routing(pod.ops, state).empty());
  const auto routes = pod.state->routes;
  const auto rules = pod.state->rules;
  auto reset = [&] {
    pod.state->routes = routes;
    pod.state->rules = rules;
  };

  REQUIRE(pod.ops.delete_rule(state.rules[0]) == DeleteOutcome::Deleted);
  auto diffs = check_source_routing(pod.ops, state);
  REQUIRE(diffs.size() == 1);
  CHECK(diffs[0].find("rule \"30000: from 192.168.10.5/32 lookup 1000\" is missing") != std::string::npos);
  reset();

  for (const RouteSpec& r : state.routes) {
    INFO(to_string(r));
    REQUIRE(pod.ops.delete_route(r) == DeleteOutcome::Deleted);
    diffs = check_source_routing(pod.ops, state);
    REQUIRE(diffs.size() == 1);
    CHECK(diffs[0].find("is missing") != std::string::npos);
    reset();
  }

  RouteSpec extra;
  extra.dst = cidr("172.16.0.0/12");
  extra.ifindex = pod.net1;
  extra.table = 1000;
  REQUIRE(pod.ops.add_route(extra) == AddOutcome::Added);
  diffs = check_source_routing(pod.ops, state);
  REQUIRE(diffs.size() == 1);
  CHECK(diffs[0].find("unexpected route") != std::string::npos);
  reset();

  RuleSpec second{AF_INET, cidr("192.168.10.5/32"), 1234, 30000};
  REQUIRE(pod.ops.add_rule(second) == AddOutcome::Added);
  diffs = check_source_routing(pod.ops, state);
  REQUIRE(diffs.size() == 1);
  CHECK(diffs[0].find("unexpected rule") != std::string::npos);
  reset();

  // The default route of the table via another gateway.
  REQUIRE(pod.ops.delete_route(state.routes.back()) == DeleteOutcome::Deleted);
  REQUIRE(pod.ops.add_default_route(AF_INET, ip("192.168.10.2"), pod.net1, 1000) == AddOutcome::Added);
  diffs = check_source_routing(pod.ops, state);
  REQUIRE(diffs.size() == 1);
  CHECK(diffs[0].find("differs") != std::string::npos);
  reset();
  CHECK(check_source_routing(pod.ops, state).empty());
}

// ---- state codec ----

TEST_CASE("source routing state: JSON round trip and strict decoding", "[netlink]") {
  Pod pod;
  pod.state->add_address(pod.net1, "2001:db8:10::5/64");
  const SourceRoutingState state = apply_source_routing(
      pod.ops, plan_source_routing(pod.ops, enabled(), "net1",
                                   {{"192.168.10.5/24", "192.168.10.1"}, {"2001:db8:10::5/64", ""}}));
  CHECK(state.tables == std::vector<int>{1000, 1001});
  const Json j = state.to_json();
  CHECK(SourceRoutingState::from_json(Json::parse(j.dump())) == state);

  auto broken = [&](const std::function<void(Json&)>& edit) {
    Json copy = j;
    edit(copy);
    return code_of([&] { (void)SourceRoutingState::from_json(copy); });
  };
  CHECK(broken([](Json& s) { s = Json::array(); }) == 6);
  CHECK(broken([](Json& s) { s["ifname"] = "net 1"; }) == 6);
  CHECK(broken([](Json& s) { s["ifname"] = "abcdefghijklmnop"; }) == 6);
  CHECK(broken([](Json& s) { s["priority"] = 40000; }) == 6);
  CHECK(broken([](Json& s) { s["pickedTables"] = "yes"; }) == 6);
  CHECK(broken([](Json& s) { s["ips"] = Json::array({"x"}); }) == 6);
  CHECK(broken([](Json& s) { s["tables"] = Json::array({254}); }) == 6);
  CHECK(broken([](Json& s) { s["rules"][0]["priority"] = 100; }) == 6);  // not at our priority
  CHECK(broken([](Json& s) { s["rules"][0]["table"] = 254; }) == 6);     // not our table
  CHECK(broken([](Json& s) { s["routes"][0]["table"] = 254; }) == 6);    // a main-table route
  CHECK(broken([](Json& s) { s["routes"][0]["dst"] = "10.0.0.1/8"; }) == 6);
  CHECK(broken([](Json& s) { s.erase("routes"); }) == 6);
}
