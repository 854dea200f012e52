// Unit tests for scoping/scoping (the façade the engine calls) with FakeNetOps and FakeIptablesRunner:
// stripping the scoping keys from confs and conflists, layered planning and every validation error
// (bad port, interface names, wrong-family CIDR, non-numeric UID), the golden mesh
// payload, apply/re-apply/remove/check of source routing + mesh together, rollback of source
// routing when the mesh fails, DEL without the applied state (prevResult IPs), the default-route
// step and the network-status fields.
#include "engine/plan.h"
#include "engine/transaction.h"
#include "scoping/scoping.h"

#include <sys/socket.h>

#include <catch2/catch.hpp>

#include "cni/error.h"
#include "firewall/fake_runner.h"
#include "firewall/rules.h"
#include "netlink/fake_net_ops.h"
#include "cni_error_of.h"
#include "fake_pod.h"
#include "mesh_golden.h"
#include "mesh_golden.h"
#include "net_specs.h"

using namespace manifold;
using namespace manifold::scoping;
using firewall::Backend;
using firewall::Family;
using manifold::cni::CniError;
using manifold::test::cidr;
using manifold::test::code_of;
using manifold::test::ip;

namespace {

// A forwarding runner, so the pool can own "its" runner while the test keeps the fake.
class Forward final : public firewall::IptablesRunner {
 public:
  explicit Forward(firewall::FakeIptablesRunner& fake) : fake_(fake) {}
  std::string save(Family f, Backend b, firewall::Table t) override { return fake_.save(f, b, t); }
  void restore(Family f, Backend b, const std::string& p) override { fake_.restore(f, b, p); }
  Backend detect() override { return fake_.detect(); }
  bool available(Family f, Backend b) override { return fake_.available(f, b); }

 private:
  firewall::FakeIptablesRunner& fake_;
};

// The routed pod (eth0 with the default route, net1 with an IPAM route) with the fakes and a
// ScopingEnv over them.
struct World : test::RoutedFakePod {
  firewall::FakeIptablesRunner fake;
  std::vector<int> lock_waits;
  IptablesRunnerPool pool{[this](int wait) -> std::unique_ptr<firewall::IptablesRunner> {
    lock_waits.push_back(wait);
    return std::make_unique<Forward>(fake);
  }};
  ScopingEnv env{ops, pool};

  std::vector<netlink::RuleSpec> our_rules() {
    std::vector<netlink::RuleSpec> out;
    for (const auto& r : ops.list_rules(AF_UNSPEC))
      if (r.priority == 30000) out.push_back(r);
    return out;
  }
  std::string nat(Family f = Family::V4) { return fake.table_text(f, Backend::Nft); }
};

// The delegate result of net1 as macvlan + static IPAM report it.
cni::Result net1_result(bool with_v6 = false) {
  cni::Result r;
  r.cni_version = "1.0.0";
  cni::Interface itf;
  itf.name = "net1";
  itf.sandbox = "/var/run/netns/fake";
  r.interfaces.push_back(itf);
  r.ips.push_back({0, "192.168.10.5/24", "192.168.10.1"});
  if (with_v6) r.ips.push_back({0, "2001:db8:10::5/64", "2001:db8:10::1"});
  cni::Route route;
  route.dst = "192.168.20.0/24";
  route.gw = "192.168.10.1";
  r.routes.push_back(route);
  return r;
}

const Json kTop = Json::parse(R"({"sourceRouting":{"enabled":true},"mesh":{"enabled":true}})");

ScopingPlan plan_for(const char* delegate_keys = "{}", const char* args = "null", const std::string& ifname = "net1") {
  return plan_scoping(kTop, Json::parse(delegate_keys), Json::parse(args), ifname);
}

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

}  // namespace

// ---- strip / plan ----

TEST_CASE("scoping: the scoping keys are stripped from a conf", "[plugin]") {
  Json conf = Json::parse(R"({"cniVersion":"1.0.0","name":"data","type":"macvlan",
      "sourceRouting":{"enabled":true},"mesh":{"inboundPort":1}})");
  const Json keys = strip_scoping_keys(conf);
  CHECK(keys == Json::parse(R"({"sourceRouting":{"enabled":true},"mesh":{"inboundPort":1}})"));
  CHECK(conf == Json::parse(R"({"cniVersion":"1.0.0","name":"data","type":"macvlan"})"));
  CHECK(strip_scoping_keys(conf) == Json::object());
}

TEST_CASE("scoping: the scoping keys are stripped from a conflist and its plugins", "[plugin]") {
  Json list = Json::parse(R"({"cniVersion":"1.0.0","name":"data","mesh":{"enabled":true,"inboundPort":5},
      "plugins":[{"type":"macvlan","mesh":{"inboundPort":6},"sourceRouting":null},
                 {"type":"tuning","sourceRouting":{"enabled":true}}]})");
  const Json keys = strip_scoping_keys(list);
  CHECK(keys == Json::parse(R"({"mesh":{"enabled":true,"inboundPort":6},"sourceRouting":{"enabled":true}})"));
  CHECK(list ==
        Json::parse(R"({"cniVersion":"1.0.0","name":"data","plugins":[{"type":"macvlan"},{"type":"tuning"}]})"));
  Json bad = Json::parse(R"({"name":"data","type":"macvlan","sourceRouting":true,"mesh":{"enabled":true}})");
  std::string msg;
  CHECK(code_of([&] { (void)strip_scoping_keys(bad); }, &msg) == 7);
  CHECK(contains(msg, "\"data\""));
  CHECK(contains(msg, "sourceRouting"));
  // Even an invalid key never stays behind for the delegate, nor does a valid one beside it.
  CHECK(bad == Json::parse(R"({"name":"data","type":"macvlan"})"));
}

TEST_CASE("scoping: plans merge top, network and pod layers per key", "[plugin]") {
  const Json top = Json::parse(R"({"mesh":{"enabled":true,"inboundPort":1000,"outboundPort":1001},
                                   "sourceRouting":{"enabled":true,"tableBase":2000}})");
  const Json network = Json::parse(R"({"mesh":{"inboundPort":2000},"sourceRouting":{"rulePriority":100}})");
  const Json pod = Json::parse(R"({"mesh":{"outboundPort":3001},"sourceRouting":{"tableBase":5000},"other":1})");
  const ScopingPlan plan = plan_scoping(top, network, pod, "net1", {"192.168.10.1"});
  CHECK(plan.ifname == "net1");
  CHECK(plan.mesh.enabled);
  CHECK(plan.mesh.inbound_port == 2000);
  CHECK(plan.mesh.outbound_port == 3001);
  CHECK(plan.source_routing.enabled);
  CHECK(plan.source_routing.table_base == 5000);
  CHECK(plan.source_routing.rule_priority == 100);
  CHECK(plan.default_route == std::vector<std::string>{"192.168.10.1"});
  CHECK(plan.active());
  CHECK(plan.mesh_json == Json::parse(R"({"enabled":true,"inboundPort":2000,"outboundPort":3001})"));
  const ScopingPlan back = ScopingPlan::from_json(Json::parse(plan.to_json().dump()));
  CHECK(back.to_json() == plan.to_json());
  CHECK(back.mesh.inbound_port == 2000);

  const ScopingPlan off = plan_scoping(Json::object(), Json::object(), nullptr, "eth0");
  CHECK_FALSE(off.active());
  CHECK(initial_scoping_state(off).is_null());
  CHECK(initial_scoping_state(plan) == Json{{"ifname", "net1"}, {"plan", plan.to_json()}});
}

TEST_CASE("scoping: every bad config is error 7 naming the field", "[plugin]") {
  const std::vector<std::tuple<const char*, const char*, const char*>> cases = {
      // (delegate keys, pod cni-args, expected text)
      {R"({"mesh":{"inboundPort":70000}})", "null", "mesh.inboundPort"},
      {R"({"mesh":{"inboundPort":"http"}})", "null", "mesh.inboundPort"},
      {R"({"mesh":{"inboundPortsToIgnore":["4190-"]}})", "null", "mesh.inboundPortsToIgnore"},
      {R"({"mesh":{"outboundPortsToIgnore":["9-3"]}})", "null", "mesh.outboundPortsToIgnore"},
      {"{}", R"({"mesh":{"outboundPort":0}})", "mesh.outboundPort"},
      {R"({"mesh":{"inboundSubnetsToIgnoreV4":["2001:db8::/64"]}})", "null", "mesh.inboundSubnetsToIgnoreV4"},
      {R"({"mesh":{"outboundSubnetsToIgnoreV6":["10.0.0.0/8"]}})", "null", "mesh.outboundSubnetsToIgnoreV6"},
      {R"({"mesh":{"proxyUID":"linkerd"}})", "null", "mesh.proxyUID"},
      {"{}", R"({"mesh":{"proxyGID":"wheel"}})", "mesh.proxyGID"},
      {R"({"mesh":{"iptablesMode":"iptables"}})", "null", "mesh.iptablesMode"},
      {R"({"sourceRouting":{"rulePriority":40000}})", "null", "sourceRouting.rulePriority"},
      {"{}", R"({"sourceRouting":{"table":"main"}})", "sourceRouting.table"},
      {"{}", R"({"sourceRouting":{"gateways":["10.0.0.1","10.0.0.2"]}})", "sourceRouting.gateways"},
      {"{}", R"({"mesh":"on"})", "pod cni-args"},
      {"{}", R"("sourceRouting=true")", "cni-args"},
  };
  for (const auto& [keys, args, text] : cases) {
    INFO(keys << " " << args);
    std::string msg;
    CHECK(code_of([k = keys, a = args] { (void)plan_for(k, a); }, &msg) == 7);
    CHECK(contains(msg, text));
  }
  for (const char* ifname : {"net 1", "abcdefghijklmnop", "", "net1;x", ".."}) {
    INFO(ifname);
    CHECK(code_of([&] { (void)plan_for("{}", "null", ifname); }) == 7);
  }
  CHECK(code_of([&] { (void)plan_scoping(kTop, Json::object(), nullptr, "net1", {"192.168.10.1", "10.0.0.1"}); }) == 7);
  CHECK(code_of([&] { (void)plan_scoping(kTop, Json::object(), nullptr, "net1", {"not-an-ip"}); }) == 7);
  CHECK(code_of([&] {
          (void)default_route_requests({plan_scoping(kTop, Json::object(), nullptr, "net1", {"10.0.0.1"}),
                                        plan_scoping(kTop, Json::object(), nullptr, "net2", {"10.1.0.1"})});
        }) == 7);
  CHECK(default_route_requests({plan_scoping(kTop, Json::object(), nullptr, "net1", {"10.0.0.1"}),
                                plan_scoping(kTop, Json::object(), nullptr, "net2", {"2001:db8::1"})})
            .size() == 2);
}

TEST_CASE("scoping: attachment addresses come from the interface's IPs", "[plugin]") {
  cni::Result r = net1_result(true);
  cni::Interface eth0;
  eth0.name = "eth0";
  r.interfaces.push_back(eth0);
  r.ips.push_back({1, "10.244.1.5/24", ""});
  const auto net1 = attachment_addresses(r, "net1");
  REQUIRE(net1.size() == 2);
  CHECK(net1[0].cidr == "192.168.10.5/24");
  CHECK(net1[0].gateway == "192.168.10.1");
  CHECK(attachment_addresses(r, "eth0").size() == 1);
  cni::Result ipam_only;
  ipam_only.ips.push_back({std::nullopt, "10.1.0.5/16", ""});
  CHECK(attachment_addresses(ipam_only, "net1").size() == 1);
}

// ---- lifecycle ----

TEST_CASE("scoping: apply installs routing and the golden mesh payload", "[plugin]") {
  World w;
  const auto main_before = w.ops.list_routes(AF_UNSPEC, netlink::kMainTable);
  const Json state = apply_scoping(w.env, plan_for(), net1_result());
  CHECK(state["ifname"] == "net1");
  CHECK(state.contains("plan"));
  CHECK(state["sourceRouting"]["tables"] == Json::array({1000}));
  CHECK(state["mesh"]["backend"] == "nft");
  CHECK(w.ops.list_routes(AF_UNSPEC, netlink::kMainTable) == main_before);
  REQUIRE(w.our_rules().size() == 1);
  CHECK(w.ops.list_routes(AF_UNSPEC, 1000).size() == 3);
  CHECK(w.lock_waits == std::vector<int>{30});
  const std::string golden = test::kBasicMeshPayload;
  CHECK(state["mesh"]["payloads"]["4"] == golden);
  CHECK(w.fake.count("restore") == 1);  // IPv4 only: the attachment has no IPv6 address
  CHECK(check_scoping(w.env, state).empty());
  CHECK(scoping_status_fields(state) ==
        Json::parse(R"({"manifold.io/mesh":{"inboundPort":4143,"outboundPort":4140}})"));
}

TEST_CASE("scoping: IPv6 addresses get IPv6 rules and tables", "[plugin]") {
  World w;
  w.state->add_address(w.net1, "2001:db8:10::5/64");
  const Json state = apply_scoping(w.env, plan_for(), net1_result(true));
  CHECK(state["mesh"]["families"] == Json::array({4, 6}));
  CHECK(contains(w.nat(Family::V6), "CNIMESH-IN-net1"));
  CHECK(state["sourceRouting"]["tables"] == Json::array({1000, 1001}));
  CHECK(check_scoping(w.env, state).empty());
}

TEST_CASE("scoping: apply twice leaves identical rules, tables and iptables", "[plugin]") {
  World w;
  w.fake.load(Family::V4, Backend::Nft,
              "*nat\n:PROXY_INIT_OUTPUT - [0:0]\n-A PROXY_INIT_OUTPUT -o lo -j RETURN\n"
              "-A OUTPUT -j PROXY_INIT_OUTPUT\nCOMMIT\n");
  const Json first = apply_scoping(w.env, plan_for(), net1_result());
  const std::string nat = w.nat();
  const auto rules = w.state->rules;
  const auto routes = w.state->routes;
  const Json second = apply_scoping(w.env, plan_for(), net1_result());
  CHECK(w.nat() == nat);
  CHECK(w.state->rules == rules);
  CHECK(w.state->routes == routes);
  CHECK(second["sourceRouting"] == first["sourceRouting"]);
  CHECK(check_scoping(w.env, second).empty());
  CHECK(contains(w.nat(), "-A PROXY_INIT_OUTPUT -o lo -j RETURN"));
}

TEST_CASE("scoping: a mesh failure undoes the source routing", "[plugin]") {
  World w;
  const auto rules = w.state->rules;
  const auto routes = w.state->routes;
  w.fake.fail_restores(Family::V4, 1);
  CHECK(code_of([&] { (void)apply_scoping(w.env, plan_for(), net1_result()); }) == 106);
  CHECK(w.state->rules == rules);
  CHECK(w.state->routes == routes);
  CHECK_FALSE(contains(w.nat(), "CNIMESH"));
}

TEST_CASE("scoping: an inactive plan touches nothing", "[plugin]") {
  World w;
  const ScopingPlan off = plan_scoping(Json::object(), Json::object(), nullptr, "net1");
  CHECK(apply_scoping(w.env, off, net1_result()).is_null());
  CHECK(w.state->journal.size() == 2);  // the fixture's own two routes
  CHECK(w.fake.calls().empty());
  CHECK(w.lock_waits.empty());
  CHECK(check_scoping(w.env, nullptr).empty());
}

TEST_CASE("scoping: ADD, DEL, DEL leaves nothing and the second DEL does nothing", "[plugin]") {
  World w;
  const auto main_before = w.ops.list_routes(AF_UNSPEC, netlink::kMainTable);
  w.fake.load(Family::V4, Backend::Nft,
              "*nat\n:ISTIO_INBOUND - [0:0]\n:CNIMESH-IN-net2 - [0:0]\n-A ISTIO_INBOUND -p tcp -j RETURN\n"
              "-A PREROUTING -p tcp -j ISTIO_INBOUND\n-A PREROUTING -i net2 -p tcp -j CNIMESH-IN-net2\nCOMMIT\n");
  const std::string foreign = w.nat();
  const cni::Result result = net1_result();
  const Json state = apply_scoping(w.env, plan_for(), result);
  remove_scoping(w.env, state, "net1", &result);
  CHECK(w.nat() == foreign);  // ISTIO_* and the other attachment's chain untouched
  CHECK(w.our_rules().empty());
  CHECK(w.ops.list_routes(AF_UNSPEC, 1000).empty());
  CHECK(w.ops.list_routes(AF_UNSPEC, netlink::kMainTable) == main_before);
  w.fake.clear_calls();
  w.state->journal.clear();
  remove_scoping(w.env, state, "net1", &result);
  CHECK(w.fake.count("restore") == 0);
  CHECK(w.state->journal.empty());
}

TEST_CASE("scoping: DEL without the applied state works from the plan and prevResult", "[plugin]") {
  World w;
  const cni::Result result = net1_result();
  const ScopingPlan plan = plan_for();
  (void)apply_scoping(w.env, plan, result);
  remove_scoping(w.env, initial_scoping_state(plan), "net1", &result);
  CHECK(w.our_rules().empty());
  CHECK(w.ops.list_routes(AF_UNSPEC, 1000).empty());
  CHECK_FALSE(contains(w.nat(), "CNIMESH"));

  // Only the plan, no prevResult: the addresses still on net1 name its IPs.
  (void)apply_scoping(w.env, plan, result);
  remove_scoping(w.env, initial_scoping_state(plan), "net1", nullptr);
  CHECK(w.our_rules().empty());
  CHECK(w.ops.list_routes(AF_UNSPEC, 1000).empty());

  // With no state at all: the rules at the default priority from the prevResult IPs.
  (void)apply_scoping(w.env, plan, result);
  remove_scoping(w.env, nullptr, "net1", &result);
  CHECK(w.our_rules().empty());
  remove_scoping(w.env, nullptr, "net1", nullptr);  // nothing known: nothing done
}

TEST_CASE("scoping: CHECK fails after each single deletion", "[plugin]") {
  World w;
  const Json state = apply_scoping(w.env, plan_for(), net1_result());
  REQUIRE(check_scoping(w.env, state).empty());
  const auto rules = w.state->rules;
  const auto routes = w.state->routes;

  SECTION("the ip rule") { REQUIRE(w.ops.delete_rule(w.our_rules().at(0)) == netlink::DeleteOutcome::Deleted); }
  SECTION("a table route") {
    netlink::RouteSpec def;
    def.family = AF_INET;
    def.table = 1000;
    REQUIRE(w.ops.delete_route(def) == netlink::DeleteOutcome::Deleted);
  }
  SECTION("the inbound jump") {
    w.fake.load(Family::V4, Backend::Nft,
                "*nat\n-D PREROUTING -i net1 -p tcp -m comment --comment \"cnimesh/net1/jump-inbound\" -j "
                "CNIMESH-IN-net1\nCOMMIT\n");
  }
  SECTION("a chain rule") {
    w.fake.load(Family::V4, Backend::Nft,
                "*nat\n-D CNIMESH-OUT-net1 -m owner --uid-owner 2102 -m comment --comment "
                "\"cnimesh/net1/ignore-proxy-uid\" -j RETURN\nCOMMIT\n");
  }
  SECTION("the default route of a default-route choice") {
    const ScopingPlan plan = plan_scoping(kTop, Json::object(), nullptr, "net1", {"192.168.10.1"});
    const Json with_default = apply_scoping(w.env, plan, net1_result());
    cni::Result r = net1_result();
    (void)apply_default_route_step(w.env, default_route_requests({plan}), {{"net1", &r}});
    REQUIRE(check_scoping(w.env, with_default).empty());
    netlink::RouteSpec def;
    def.gw = ip("192.168.10.1");
    REQUIRE(w.ops.delete_route(def) == netlink::DeleteOutcome::Deleted);
    const auto diffs = check_scoping(w.env, with_default);
    REQUIRE(diffs.size() == 1);
    CHECK(contains(diffs[0], "default route"));
    return;
  }
  const auto diffs = check_scoping(w.env, state);
  CHECK(diffs.size() == 1);
  (void)rules;
  (void)routes;
}

TEST_CASE("scoping: CHECK reports parts that were never applied", "[plugin]") {
  World w;
  const auto diffs = check_scoping(w.env, initial_scoping_state(plan_for()));
  REQUIRE(diffs.size() == 2);
  CHECK(contains(diffs[0], "source routing of net1 was never applied"));
  CHECK(contains(diffs[1], "mesh rules of net1 were never applied"));
  CHECK(code_of([&] { (void)check_scoping(w.env, Json::object()); }) == 6);
}

TEST_CASE("scoping: the default-route step moves the route and rewrites the results", "[plugin]") {
  World w;
  cni::Result eth0;
  cni::Route def;
  def.dst = "0.0.0.0/0";
  def.gw = "10.244.1.1";
  eth0.routes.push_back(def);
  cni::Result net1 = net1_result();
  const std::vector<ScopingPlan> plans{plan_scoping(Json::object(), Json::object(), nullptr, "eth0"),
                                       plan_scoping(Json::object(), Json::object(), nullptr, "net1", {"192.168.10.1"})};
  const auto changes =
      apply_default_route_step(w.env, default_route_requests(plans), {{"eth0", &eth0}, {"net1", &net1}});
  REQUIRE(changes.size() == 1);
  CHECK(eth0.routes.empty());
  CHECK(cni::default_route_gateways(net1) == std::vector<std::string>{"192.168.10.1"});
  std::vector<std::string> defaults;
  for (const auto& r : w.ops.list_routes(AF_INET, netlink::kMainTable))
    if (!r.dst) defaults.push_back(netlink::to_string(r));
  CHECK(defaults == std::vector<std::string>{"default via 192.168.10.1 dev #3 proto boot"});

  // A refused route changes neither the namespace nor the results.
  World w2;
  cni::Result eth0_copy = eth0;
  cni::Result net1_copy = net1_result();
  const cni::Result net1_before = net1_copy;
  CHECK(code_of([&] {
          (void)apply_default_route_step(w2.env, {{"net1", AF_INET, ip("172.16.0.1")}}, {{"net1", &net1_copy}});
        }) == 105);
  CHECK(net1_copy == net1_before);
  CHECK(apply_default_route_step(w2.env, {}, {{"net1", &net1_copy}}).empty());
}

TEST_CASE("scoping: the cached state is validated", "[plugin]") {
  World w;
  Json state = apply_scoping(w.env, plan_for(), net1_result());
  Json bad = state;
  bad["plan"]["mesh"]["inboundPort"] = 0;
  CHECK(code_of([&] { (void)check_scoping(w.env, bad); }) == 6);
  bad = state;
  bad["plan"]["ifname"] = "net 1";
  CHECK(code_of([&] { remove_scoping(w.env, bad, "net1", nullptr); }) == 6);
  bad = state;
  bad["sourceRouting"]["rules"][0]["priority"] = 1;
  CHECK(code_of([&] { remove_scoping(w.env, bad, "net1", nullptr); }) == 6);
  CHECK(scoping_status_fields(nullptr) == Json::object());
  CHECK(scoping_status_fields(initial_scoping_state(plan_for())) == Json::object());
}

TEST_CASE("scoping: attachments are stripped and planned together", "[plugin]") {
  std::vector<engine::Attachment> attachments(3);
  attachments[0].ifname = "eth0";
  attachments[0].delegate = Json::parse(R"({"name":"cluster","type":"bridge","sourceRouting":{"enabled":false}})");
  attachments[1].ifname = "net1";
  attachments[1].delegate =
      Json::parse(R"({"name":"data","plugins":[{"type":"macvlan","mesh":{"inboundPort":5000}}]})");
  attachments[1].selection_cni_args = Json::parse(R"({"mesh":{"outboundPort":5001}})");
  attachments[1].default_route = {"192.168.10.1"};
  attachments[2].ifname = "net2";
  attachments[2].delegate = Json::parse(R"({"name":"plain","type":"macvlan"})");
  const auto plans = engine::plan_attachments_scoping(kTop, attachments);
  REQUIRE(plans.size() == 3);
  CHECK_FALSE(plans[0].source_routing.enabled);
  CHECK(plans[0].mesh.enabled);  // the top-level default
  CHECK(plans[1].mesh.inbound_port == 5000);
  CHECK(plans[1].mesh.outbound_port == 5001);
  CHECK(plans[1].default_route == std::vector<std::string>{"192.168.10.1"});
  CHECK(plans[2].ifname == "net2");
  CHECK(attachments[0].delegate == Json::parse(R"({"name":"cluster","type":"bridge"})"));
  CHECK(attachments[1].delegate == Json::parse(R"({"name":"data","plugins":[{"type":"macvlan"}]})"));

  attachments[2].default_route = {"10.0.0.1"};
  CHECK(code_of([&] { (void)engine::plan_attachments_scoping(kTop, attachments); }) == 7);

  // A bad key in one attachment fails the plan, but every delegate has lost its keys.
  attachments[0].delegate = Json::parse(R"({"name":"cluster","type":"bridge","mesh":"on"})");
  attachments[1].delegate = Json::parse(R"({"name":"data","type":"macvlan","sourceRouting":{"enabled":true}})");
  attachments[2].default_route.clear();
  CHECK(code_of([&] { (void)engine::plan_attachments_scoping(kTop, attachments); }) == 7);
  CHECK(attachments[0].delegate == Json::parse(R"({"name":"cluster","type":"bridge"})"));
  CHECK(attachments[1].delegate == Json::parse(R"({"name":"data","type":"macvlan"})"));
}

TEST_CASE("scoping: the default-route step rewrites the cached results", "[plugin]") {
  World w;
  store::ContainerRecord record;
  store::AttachmentRecord eth0;
  eth0.ifname = "eth0";
  eth0.config = R"({"cniVersion":"0.4.0","name":"cluster","type":"bridge"})";
  eth0.result = R"({"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.244.1.5/24","gateway":"10.244.1.1"}],)"
                R"("routes":[{"dst":"0.0.0.0/0","gw":"10.244.1.1"}]})";
  store::AttachmentRecord net1;
  net1.ifname = "net1";
  net1.config = R"({"cniVersion":"1.0.0","name":"data","type":"macvlan"})";
  net1.result = R"({"cniVersion":"1.0.0","ips":[{"address":"192.168.10.5/24"}]})";
  store::AttachmentRecord other;
  other.ifname = "net2";
  other.config = R"({"cniVersion":"1.0.0","name":"other","type":"macvlan"})";
  other.result = R"({ "cniVersion" : "1.0.0" })";  // unchanged results keep their exact bytes
  record.attachments = {eth0, net1, other};
  const std::vector<ScopingPlan> plans{plan_scoping(Json::object(), Json::object(), nullptr, "eth0"),
                                       plan_scoping(Json::object(), Json::object(), nullptr, "net1", {"192.168.10.1"}),
                                       plan_scoping(Json::object(), Json::object(), nullptr, "net2")};
  CHECK(engine::apply_default_routes_to_record(w.env, plans, record).size() == 1);
  CHECK(
      Json::parse(record.attachments[0].result) ==
      Json::parse(
          R"({"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.244.1.5/24","gateway":"10.244.1.1"}],"dns":{}})"));
  CHECK(Json::parse(record.attachments[1].result)["routes"] ==
        Json::parse(R"([{"dst":"0.0.0.0/0","gw":"192.168.10.1"}])"));
  CHECK(record.attachments[2].result == R"({ "cniVersion" : "1.0.0" })");
  // Without requests nothing is touched at all.
  const store::ContainerRecord before = record;
  CHECK(engine::apply_default_routes_to_record(w.env, {plans[0], plans[0], plans[2]}, record).empty());
  CHECK(record == before);
}
